/* SPDX-License-Identifier: GPL-2.0-only */
/* probe.c -- configure-time check that clang can build a libFuzzer target here. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
