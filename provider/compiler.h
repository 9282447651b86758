/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Compiler hints, by the names the kernel and rdma-core's util/compiler.h
 * give them, for the data path: which branch is the common one, what must
 * be inlined into an entry and what must stay out of it.
 */
#ifndef IBCKPT_COMPILER_H
#define IBCKPT_COMPILER_H

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* Inlined even at -O0 or past the compiler's size limits: an entry's body. */
#define ALWAYS_INLINE	__attribute__((always_inline))
/* Kept out of its callers: a slow path that would cost them registers. */
#define NOINLINE	__attribute__((noinline))
/* Rarely run: laid out away from the hot code. */
#define COLD		__attribute__((cold))

#endif /* IBCKPT_COMPILER_H */
