/*
 * xalloc - allocation that never returns NULL: a real out-of-memory prints one line to stderr
 * and aborts (STYLE §6). Use for process- and object-lifetime memory; request memory comes
 * from an arena.
 */
#ifndef STACKSIFT_BASE_XALLOC_H
#define STACKSIFT_BASE_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);          /* aborts on count*size overflow too */
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
