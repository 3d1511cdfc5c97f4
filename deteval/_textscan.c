/* deteval._textscan: readers for VOC text inputs (optional; deteval.io.voc has the
 * reference Python/lxml code and uses it for anything these functions decline).
 *
 *   scan_detections(data[, table])   one detection file's bytes (below)
 *   id_table(keys)                   image id bytes -> position, for the scanners
 *   scan_detection_files(paths, table)  read + scan every class file into shared columns
 *   scan_voc_annotations(datas)      annotation XML bytes -> XSLT-format object lines
 *   scan_voc_files(paths)            read + scan annotation XML files into columns
 *   scan_coco_results(data)          COCO results JSON bytes -> columns (a strict subset)
 *
 * scan_detections(data) scans lines of `<image_id> <score> <xmin> <ymin> <xmax> <ymax>`
 * and returns raw native-endian buffers for numpy.frombuffer:
 *
 *     (values: bytearray, N*5 float64,
 *      id_start: bytearray, N int64 (byte offset of the id token),
 *      id_len: bytearray, N int64,
 *      line: bytearray, N int64 (1-based line numbers),
 *      error: None or (line_number, kind, token_start, token_len))
 *
 * kind is "fields" (a non-blank line without exactly 6 tokens; token = the line),
 * "number" (a value token that Python's float() rejects) or "binary" (a NUL byte).
 * On error the buffers hold the rows before the error; the error is the first one in
 * file order.
 *
 * Lines and tokens follow bytes.splitlines() and bytes.split(): a line ends at "\n",
 * "\r" or "\r\n"; whitespace is space, \t, \v, \f (and the line ends).
 *
 * Numbers equal Python's float(token) bit for bit: a fast exact path handles
 * [+-]digits[.digits][(e|E)[+-]digits] whose decimal mantissa m is <= 2^53 and whose
 * power of ten |e| <= 22 (m and 10^e are then exact doubles, so one IEEE multiply or
 * divide is correctly rounded, as is Python's strtod); anything else goes through
 * PyOS_string_to_double (or PyFloat_FromString for tokens with '_'), i.e. float()'s own
 * code. nan/inf are accepted like float() does; the caller checks finiteness.
 */

/* The parts, one grammar per file, are in deteval/_textscan_src/; this file holds the
 * includes, the module table and the init function. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#ifndef S_ISREG
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
#endif
#ifdef _WIN32
#include <stdio.h>
#else
#include <fcntl.h>
#include <unistd.h>
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#endif

#include "_rle_count.h"
#include "_textscan_src/common.h"
#include "_textscan_src/numbers.h"
#include "_textscan_src/id_table.h"
#include "_textscan_src/detections.h"
#include "_textscan_src/voc_xml.h"
#include "_textscan_src/voc_files.h"
#include "_textscan_src/detection_files.h"
#include "_textscan_src/coco_results.h"

static PyMethodDef methods[] = {
    {"scan_detections", scan_detections, METH_VARARGS,
     "scan_detections(data[, table]) -> (values, id_start, id_len, line, error[, image_idx])\n\n"
     "Scan `<image_id> <score> <xmin> <ymin> <xmax> <ymax>` lines of a bytes-like object.\n"
     "values: bytearray of N*5 float64; id_start, id_len, line: bytearrays of N int64\n"
     "(line numbers 1-based, as bytes.splitlines() counts them); error: None or\n"
     "(line_number, kind, token_start, token_len) with kind 'fields', 'number' or\n"
     "'binary'. Numbers equal Python's float() of the token bit for bit. With an id_table,\n"
     "image_idx (bytearray of N int64) holds each id's position in it, or -1."},
    {"scan_detection_files", scan_detection_files, METH_VARARGS,
     "scan_detection_files(paths, table) -> (status, counts, scores, boxes, image_idx)\n\n"
     "Read and scan detection files into shared columns; status[i] is 1 for a file left\n"
     "to the reference path (see the C source)."},
    {"scan_coco_results", scan_coco_results, METH_O,
     "scan_coco_results(data) -> None or (n, image_id, category_id, score, bbox)\n\n"
     "Columns of a COCO results JSON file inside a strict subset (see the C source);\n"
     "None: decode the file with msgspec / json as before."},
    {"scan_coco_segm_results", scan_coco_segm_results, METH_O,
     "scan_coco_segm_results(data) -> None or (n, image_id, category_id, score, bbox,\n"
     "with_bbox, height, width, runs, lengths, totals, areas)\n\n"
     "Columns and decoded RLE masks of a COCO segmentation results file inside a strict\n"
     "subset (see the C source); None: decode the file with msgspec as before."},
    {"id_table", id_table, METH_O,
     "id_table(keys) -> table for scan_detections: keys is a sequence of bytes; a token\n"
     "equal to keys[i] maps to i (the last i for a repeated key)."},
    {"scan_voc_annotations", scan_voc_annotations, METH_O,
     "scan_voc_annotations(datas) -> (out, fallback)\n\n"
     "Object records (as deteval.io.voc._OBJECT_LINES writes them) of the VOC annotation\n"
     "files (a list of bytes) inside a strict XML subset; fallback[i] is 1 for a file\n"
     "outside it (nothing written; parse it with lxml), else 0."},
    {"scan_voc_files", scan_voc_files, METH_O,
     "scan_voc_files(paths) -> (fallback, counts, names, name_idx, boxes, difficult, ok)\n\n"
     "Read and scan VOC annotation files into columns (see the C source for the layout);\n"
     "fallback[i] is 1 for a file left to Python and lxml."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "deteval._textscan",
    "Fast scanner for VOC detection text files (optional; deteval falls back to Python).",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__textscan(void)
{
    init_classes();
    xs_init_classes();
    return PyModule_Create(&module);
}

