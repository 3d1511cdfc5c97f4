/* deteval: one count of a compressed COCO RLE string, shared by deteval._kernels
 * (rle_decode) and deteval._textscan (scan_coco_segm_results). A leaf algorithm: no Python
 * objects, included once by each extension.
 *
 * The format (pycocotools' rleToString): each count is written as 5-bit groups, character
 * '0' + group, bit 0x20 of a group = more groups follow, bit 0x10 of the last group = the
 * count is negative; from the third count on, what is written is the difference to the
 * count two places back (the caller adds it). Reference (Python): deteval.masks
 * decode_rle_string. */
#ifndef DETEVAL_RLE_COUNT_H
#define DETEVAL_RLE_COUNT_H

#include <stdint.h>

enum { RLE_COUNT_OK = 0, RLE_COUNT_TRUNCATED = 1, RLE_COUNT_BAD_CHAR = 2 };

/* Read the count starting at s[*p] (*p < len) into *out and move *p past it. With
 * json_escapes, the group character 92 ('\\') is read as JSON writes it inside a string,
 * two backslashes. Returns RLE_COUNT_OK, RLE_COUNT_TRUNCATED (the string ends inside the
 * count, or more than 13 groups) or RLE_COUNT_BAD_CHAR (a character outside '0'..'o'); on an
 * error *p is where reading stopped (the bad character). */
static int
rle_read_count(const unsigned char *s, Py_ssize_t len, Py_ssize_t *p, int json_escapes,
               int64_t *out)
{
    Py_ssize_t q = *p;
    int64_t x = 0;
    int k = 0, more = 1;
    int c = s[q] - 48;
    if (c >= 0 && c < 32) { /* '\\' (92) is never a one-group count */
        /* the usual case, one group: 0..15, or -16..-1 with bit 0x10 */
        *out = (c & 0x10) ? c - 32 : c;
        *p = q + 1;
        return RLE_COUNT_OK;
    }
    while (more) {
        if (q >= len || k > 12) {
            *p = q;
            return RLE_COUNT_TRUNCATED;
        }
        if (json_escapes && s[q] == '\\') {
            if (q + 1 >= len || s[q + 1] != '\\') {
                *p = q;
                return RLE_COUNT_BAD_CHAR;
            }
            q++;
        }
        c = s[q] - 48;
        if (c < 0 || c > 63) {
            *p = q;
            return RLE_COUNT_BAD_CHAR;
        }
        x |= (int64_t)(c & 0x1f) << (5 * k);
        more = c & 0x20;
        q++;
        k++;
        if (!more && (c & 0x10))
            x |= (int64_t)(-1) * ((int64_t)1 << (5 * k));
    }
    *out = x;
    *p = q;
    return RLE_COUNT_OK;
}

#endif /* DETEVAL_RLE_COUNT_H */
