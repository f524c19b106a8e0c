/* The live-handle registry (handles.h): an open-addressing set of pointers. */
#include "handles.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct slot {
    const void *p; /* NULL: empty; TOMBSTONE: removed */
    int kind;
} slot;

static const char tombstone_byte;
#define TOMBSTONE ((const void *)&tombstone_byte)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot *table;
static size_t cap, used; /* used counts live entries and tombstones */

void mxa_handles_lock(void) { pthread_mutex_lock(&lock); }
void mxa_handles_unlock(void) { pthread_mutex_unlock(&lock); }

static size_t hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot holding p, or NULL. */
static slot *find(const void *p)
{
    if (!cap || !p) return NULL;
    for (size_t i = hash(p) & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), n++) {
        if (table[i].p == NULL) return NULL;
        if (table[i].p == p) return &table[i];
    }
    return NULL;
}

static void put(slot *t, size_t c, const void *p, int kind)
{
    size_t i = hash(p) & (c - 1);
    while (t[i].p && t[i].p != TOMBSTONE) i = (i + 1) & (c - 1);
    t[i].p = p;
    t[i].kind = kind;
}

/* Rebuilds the table at a size where live entries fill at most a quarter. */
static int grow(void)
{
    size_t live = 0;
    for (size_t i = 0; i < cap; i++) live += table[i].p && table[i].p != TOMBSTONE;
    size_t c = 64;
    while (c < 4 * (live + 1)) c *= 2;
    slot *t = calloc(c, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < cap; i++)
        if (table[i].p && table[i].p != TOMBSTONE) put(t, c, table[i].p, table[i].kind);
    free(table);
    table = t;
    cap = c;
    used = live;
    return 0;
}

int mxa_handle_add_locked(const void *p, mxa_handle_kind kind)
{
    if ((used + 1) * 2 > cap && grow()) return -1;
    put(table, cap, p, (int)kind);
    used++;
    return 0;
}

int mxa_handle_remove_locked(const void *p, mxa_handle_kind kind)
{
    slot *s = find(p);
    if (!s || s->kind != (int)kind) return 0;
    s->p = TOMBSTONE; /* still counted in `used` until the next grow */
    return 1;
}

int mxa_handle_live_locked(const void *p, mxa_handle_kind kind)
{
    const slot *s = find(p);
    return s && s->kind == (int)kind;
}

int mxa_handle_live(const void *p, mxa_handle_kind kind)
{
    pthread_mutex_lock(&lock);
    int live = mxa_handle_live_locked(p, kind);
    pthread_mutex_unlock(&lock);
    return live;
}
