/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-ins for the little of the kernel that src/track.c and the
 * vendored list.h / rbtree.h (from the kernel's tools/ tree) use.
 */
#ifndef AIPU_SHIM_KERNEL_H
#define AIPU_SHIM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef unsigned long pgoff_t;

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef __maybe_unused
#define __maybe_unused __attribute__((unused))
#endif
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define min_t(type, a, b) ((type)(a) < (type)(b) ? (type)(a) : (type)(b))
#define LIST_POISON1 ((void *)0x100)
#define LIST_POISON2 ((void *)0x122)
#define EXPORT_SYMBOL(x)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct list_head {
	struct list_head *next, *prev;
};

struct hlist_head {
	struct hlist_node *first;
};

struct hlist_node {
	struct hlist_node *next, **pprev;
};

/* jiffies arithmetic, as include/linux/jiffies.h defines it */
#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) ((long)((a) - (b)) >= 0)

static inline int fls_long(unsigned long x)
{
	return x ? 64 - __builtin_clzl(x) : 0;
}

#define GOLDEN_RATIO_64 0x61C8864680B583EBull
static inline u32 hash_ptr(const void *p, unsigned int bits)
{
	return (u32)(((u64)(uintptr_t)p * GOLDEN_RATIO_64) >> (64 - bits));
}

#endif
