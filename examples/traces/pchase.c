/* Pointer-chasing list walk: NODES 64-byte nodes linked in a random order (each hop is a
 * dependent load to an unpredictable line), walked PASSES times. Traced with lackey by
 * make_traces.sh; the trace ships as pchase.tkt. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NODES 8192
#define PASSES 4

struct node {
    struct node *next;
    uint64_t pad[7];
};

int main(void) {
    struct node *nodes = aligned_alloc(4096, NODES * sizeof(struct node));
    uint32_t *order = malloc(NODES * sizeof(uint32_t));
    uint64_t x = 88172645463325252ull; /* xorshift64, fixed seed: the same trace every time */
    for (uint32_t i = 0; i < NODES; i++) order[i] = i;
    for (uint32_t i = NODES - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint32_t j = (uint32_t)(x % (i + 1));
        uint32_t t = order[i]; order[i] = order[j]; order[j] = t;
    }
    for (uint32_t i = 0; i < NODES; i++) nodes[order[i]].next = &nodes[order[(i + 1) % NODES]];
    free(order);
    struct node *p = &nodes[0];
    for (long h = 0; h < (long)NODES * PASSES; h++) p = p->next;
    printf("%p\n", (void *)p);
    return 0;
}
