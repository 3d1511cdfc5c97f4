/* deteval._textscan: what every grammar shares: the one byte-string hash and the one
 * array-growth helper.
 *
 * Reference (Python): dict hashing / list growth (behaviour-free helpers).
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_COMMON_H
#define DETEVAL_TEXTSCAN_COMMON_H

/* FNV-1a, 64 bits: the id table's and the XML name table's hash */
static uint64_t
fnv1a(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* grow *p (capacity *cap items of elem bytes) to hold at least need items, doubling from
 * 1024; 0 on success, -1 when out of memory (*p unchanged) */
static int
grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : 1024;
    void *np_;
    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    np_ = PyMem_RawRealloc(*p, c * elem);
    if (np_ == NULL)
        return -1;
    *p = np_;
    *cap = c;
    return 0;
}

#endif /* DETEVAL_TEXTSCAN_COMMON_H */
