/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Compiler hints, by the names the kernel and rdma-core's util/compiler.h
 * give them, for the data path: which branch is the common one, what must
 * be inlined into an entry and what must stay out of it.
 */
#ifndef IBCKPT_COMPILER_H
#define IBCKPT_COMPILER_H

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

/* Inlined even at -O0 or past the compiler's size limits: an entry's body. */
#ifndef ALWAYS_INLINE
#define ALWAYS_INLINE	__attribute__((always_inline))
#endif
/* Kept out of its callers: a slow path that would cost them registers. */
#ifndef NOINLINE
#define NOINLINE	__attribute__((noinline))
#endif
/* Rarely run: laid out away from the hot code. */
#ifndef COLD
#define COLD		__attribute__((cold))
#endif

#endif /* IBCKPT_COMPILER_H */
