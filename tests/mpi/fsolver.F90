! SPDX-License-Identifier: GPL-2.0-only
! fsolver.F90 -- a Fortran MPI program shaped like a real code: a set-up that differs from the
! steady state (broadcasts of the input, a decomposition), a main loop of halo exchanges and a
! global residual with load that drifts as it runs, output every few iterations (a gather to
! rank 0, which "writes" longer), and a tear-down. Built with `use mpi` (default) or with
! `include 'mpif.h'` (-DMPIF_H), against Open MPI's and MPICH's Fortran bindings.
!
! usage: fsolver ITERS [WORK_US [OUTPUT_EVERY [STALL_RANK STALL_ITER STALL_US]]]
! The lines that call MPI carry "! @name" markers: the tests expect call sites there (one line
! per call: compilers differ in which line of a continued statement they give the call).
program fsolver
#ifndef MPIF_H
   use mpi
#endif
   implicit none
#ifdef MPIF_H
   include 'mpif.h'
#endif
   integer :: ierr, rank, nprocs, left, right, iter, iters, work_us, every
   integer :: stall_rank, stall_iter, stall_us, st(MPI_STATUS_SIZE)
   double precision :: params(8), hout(64), hin(64), residual, total, cells(256)
   double precision :: gathered(256 * 64)
   character(len=32) :: arg

   iters = 100
   work_us = 200
   every = 10
   stall_rank = -1
   stall_iter = -1
   stall_us = 0
   if (command_argument_count() >= 1) then
      call get_command_argument(1, arg)
      read (arg, *) iters
   end if
   if (command_argument_count() >= 2) then
      call get_command_argument(2, arg)
      read (arg, *) work_us
   end if
   if (command_argument_count() >= 3) then
      call get_command_argument(3, arg)
      read (arg, *) every
   end if
   if (command_argument_count() >= 6) then
      call get_command_argument(4, arg)
      read (arg, *) stall_rank
      call get_command_argument(5, arg)
      read (arg, *) stall_iter
      call get_command_argument(6, arg)
      read (arg, *) stall_us
   end if

   call MPI_Init(ierr) ! @init
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
   left = mod(rank + nprocs - 1, nprocs)
   right = mod(rank + 1, nprocs)

   ! set-up: the input read by rank 0 and broadcast, a decomposition agreed on
   params = 0
   if (rank == 0) then
      params(1) = iters
      call spin(5 * work_us)
   end if
   call MPI_Bcast(params, 8, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr) ! @bcast_input
   call MPI_Bcast(cells, 256, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr) ! @bcast_mesh
   call MPI_Barrier(MPI_COMM_WORLD, ierr) ! @barrier_setup
   cells = rank

   do iter = 1, iters
      hout = cells(1:64) + iter
      call MPI_Sendrecv(hout, 64, MPI_DOUBLE_PRECISION, right, 1, hin, 64, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, st, ierr) ! @sendrecv
      ! the load drifts: later iterations cost more, rank by rank a little differently
      call spin(work_us + (work_us * iter) / (2 * iters) + rank * work_us / 10)
      if (rank == stall_rank .and. iter == stall_iter) call spin(stall_us)
      residual = sum(hin) * 1.0d-3
      call MPI_Allreduce(residual, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! @allreduce
      if (mod(iter, every) == 0) then
         call MPI_Gather(cells, 256, MPI_DOUBLE_PRECISION, gathered, 256, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr) ! @gather
         if (rank == 0) call spin(3 * work_us)
      end if
   end do

   ! tear-down: a last reduction and a barrier before leaving
   call MPI_Reduce(total, residual, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr) ! @reduce_final
   call MPI_Barrier(MPI_COMM_WORLD, ierr) ! @barrier_final
   call MPI_Finalize(ierr) ! @finalize

contains

   ! Compute for about US microseconds (wall clock: what a rank that computes looks like)
   subroutine spin(us)
      integer, intent(in) :: us
      integer(kind=8) :: t0, t, rate
      double precision :: x
      call system_clock(t0, rate)
      x = 1
      do
         x = x * 1.0000001d0 + 1.0d-9
         call system_clock(t)
         if ((t - t0) * 1000000 / rate >= us) exit
      end do
      if (x < 0) print *, x
   end subroutine spin
end program fsolver
