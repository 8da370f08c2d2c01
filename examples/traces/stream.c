/* Streaming sum: a sequential pass over an array of doubles (independent, prefetchable
 * loads), PASSES times. Traced with lackey by make_traces.sh; the trace ships as stream.tkt. */
#include <stdio.h>
#include <stdlib.h>

#define BYTES (2u << 20)
#define PASSES 2

int main(void) {
    size_t n = BYTES / sizeof(double);
    double *a = aligned_alloc(4096, BYTES);
    for (size_t i = 0; i < n; i++) a[i] = (double)i;
    double s = 0.0;
    for (int k = 0; k < PASSES; k++)
        for (size_t i = 0; i < n; i++) s += a[i];
    printf("%f\n", s);
    return 0;
}
