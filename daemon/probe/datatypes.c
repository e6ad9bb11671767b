/* SPDX-License-Identifier: GPL-2.0-only */
/* datatypes.c -- predefined MPI handles: datatype sizes, from the handle (MPICH) or from the
 * exported type objects whose addresses are the handles (Open MPI), and MPI_COMM_WORLD. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "datatypes.h"
#include "elfobj.h"
#include "objcache.h"
#include "procmaps.h"

static const struct {
	const char *name;
	uint32_t size;
} ompi_types[] = {
	{"ompi_mpi_char", 1},	    {"ompi_mpi_signed_char", 1}, {"ompi_mpi_unsigned_char", 1},
	{"ompi_mpi_byte", 1},	    {"ompi_mpi_packed", 1},	 {"ompi_mpi_short", 2},
	{"ompi_mpi_unsigned_short", 2}, {"ompi_mpi_int", 4},	 {"ompi_mpi_unsigned", 4},
	{"ompi_mpi_long", 8},	    {"ompi_mpi_unsigned_long", 8}, {"ompi_mpi_long_long_int", 8},
	{"ompi_mpi_unsigned_long_long", 8}, {"ompi_mpi_float", 4}, {"ompi_mpi_double", 8},
	{"ompi_mpi_long_double", 16}, {"ompi_mpi_int8_t", 1},	 {"ompi_mpi_uint8_t", 1},
	{"ompi_mpi_int16_t", 2},    {"ompi_mpi_uint16_t", 2},	 {"ompi_mpi_int32_t", 4},
	{"ompi_mpi_uint32_t", 4},   {"ompi_mpi_int64_t", 8},	 {"ompi_mpi_uint64_t", 8},
	{"ompi_mpi_c_bool", 1},	    {"ompi_mpi_wchar", 4},	 {"ompi_mpi_c_float_complex", 8},
	{"ompi_mpi_c_double_complex", 16}, {"ompi_mpi_2int", 8},	 {"ompi_mpi_aint", 8},
	{"ompi_mpi_offset", 8},	    {"ompi_mpi_count", 8},	 {"ompi_mpi_real", 4},
	{"ompi_mpi_dblprec", 8},    {"ompi_mpi_integer", 4},	 {"ompi_mpi_character", 1},
};

/* The runtime address of ELF address VADDR of OBJ, mapped among MAPS as FILE's mappings. */
static uint64_t runtime_address(const struct pdi_maps *maps, const struct pdi_mapping *file,
				struct pdi_elfobj *obj, uint64_t vaddr)
{
	for (size_t k = 0; k < maps->n; k++) {
		const struct pdi_mapping *m = &maps->v[k];

		if (m->ino == file->ino && m->dev == file->dev && m->pgoff == 0)
			return m->start - pdi_elfobj_load_base(obj) + vaddr;
	}
	return 0;
}

/* The executable's mapping: its data symbols come first in the dynamic linker's order. */
static const struct pdi_mapping *exe_mapping(pid_t pid, const struct pdi_maps *maps)
{
	dev_t dev;
	ino_t ino;

	return pdi_exe_identity(pid, &dev, &ino) < 0 ? NULL : pdi_maps_of_file(maps, dev, ino);
}

#define MPICH_COMM_WORLD 0x44000000u /* mpi.h of the MPICH family */

struct defining_obj {
	struct pdi_elfobj *obj;
	const struct pdi_mapping *map;
};

/* The runtime address of data symbol NAME, from the first of the two objects that defines it. */
static uint64_t data_address(const struct pdi_maps *maps, const struct defining_obj where[2], const char *name)
{
	for (unsigned w = 0; w < 2; w++) {
		uint64_t vaddr;

		if (where[w].obj && pdi_elfobj_data_vaddr(where[w].obj, name, &vaddr) == 0)
			return runtime_address(maps, where[w].map, where[w].obj, vaddr);
	}
	return 0;
}

/* MPICH's family: the handles are the same in every process, nothing is read (true). */
static bool load_int_handles(struct pdi_dtypes *dt, bool int_handles)
{
	*dt = (struct pdi_dtypes){.int_handles = int_handles};
	if (int_handles)
		dt->comm_world = MPICH_COMM_WORLD;
	return int_handles;
}

/* Open MPI's handles, from the objects WHERE (the executable's first, for its copies). */
static void load_ompi(struct pdi_dtypes *dt, const struct pdi_maps *maps, const struct defining_obj where[2])
{
	for (unsigned i = 0; i < sizeof(ompi_types) / sizeof(ompi_types[0]) && dt->n < PDI_MAX_DTYPES; i++) {
		uint64_t addr = data_address(maps, where, ompi_types[i].name);

		if (addr) {
			dt->handle[dt->n] = addr;
			dt->size[dt->n++] = ompi_types[i].size;
		}
	}
	dt->comm_world = data_address(maps, where, "ompi_mpi_comm_world");
}

/* WHERE[0], the executable's object, from the cache (none if it cannot be had). */
static void get_exe(struct pdi_objcache *objs, pid_t pid, struct defining_obj where[2])
{
	if (where[0].map && pdi_objcache_get(objs, pid, where[0].map, &where[0].obj) < 0)
		where[0].obj = NULL;
}

void pdi_dtypes_load(struct pdi_dtypes *dt, bool int_handles, struct pdi_objcache *objs, pid_t pid,
		     const struct pdi_maps *maps, struct pdi_elfobj *mpi, const struct pdi_mapping *mpi_map)
{
	/* A program that names MPI_INT holds ompi_mpi_int by a copy relocation: the handle
	 * is then the executable's copy, which the library uses too. So the executable is
	 * searched first, as the dynamic linker does. */
	struct defining_obj where[2] = {{NULL, NULL}, {mpi, mpi_map}};

	if (load_int_handles(dt, int_handles))
		return;
	where[0].map = exe_mapping(pid, maps);
	get_exe(objs, pid, where);
	load_ompi(dt, maps, where);
}

void pdi_dtypes_load_read(struct pdi_dtypes *dt, bool int_handles, struct pdi_objcache *objs, pid_t pid,
			  const struct pdi_maps *maps, int exe_fd, uint64_t mpi_dev, uint64_t mpi_ino)
{
	struct defining_obj where[2] = {{NULL, NULL}, {NULL, NULL}};
	struct stat st;

	if (load_int_handles(dt, int_handles) || !maps)
		return;
	if (exe_fd >= 0 && fstat(exe_fd, &st) == 0 && (where[0].map = pdi_maps_of_file(maps, st.st_dev, st.st_ino)) &&
	    pdi_objcache_get_pinned(objs, pid, where[0].map, exe_fd, &where[0].obj) < 0)
		where[0].obj = NULL;
	/* the library last: an object of the cache lives until its next get */
	if (!(where[1].map = pdi_maps_of_file(maps, mpi_dev, mpi_ino)) ||
	    pdi_objcache_get(objs, pid, where[1].map, &where[1].obj) < 0)
		return; /* unknown: its calls' bytes are 0 */
	load_ompi(dt, maps, where);
}

uint32_t pdi_dtype_size(const struct pdi_dtypes *dt, uint64_t handle)
{
	if (dt->int_handles) {
		/* MPICH: builtin handles are 0b01 in the top bits, the size in bits 8-15 */
		uint32_t h = (uint32_t)handle;
		return (h >> 30) == 1 ? (h >> 8) & 0xff : 0;
	}
	for (unsigned i = 0; i < dt->n; i++)
		if (dt->handle[i] == handle)
			return dt->size[i];
	return 0;
}
