/* deteval._textscan: reading and scanning every class's detection file into shared columns (scan_detection_files).
 *
 * Reference (Python): deteval.io.voc._detection_parts.
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_DETECTION_FILES_H
#define DETEVAL_TEXTSCAN_DETECTION_FILES_H

/* ---- scan_detection_files: read and scan several detection files into shared columns
 *
 * scan_detection_files(paths, table) -> (status, counts, scores, boxes, image_idx)
 *
 * For each file (str/bytes/os.PathLike), in order: status[i] = 0 when the file was
 * read here, holds no NUL byte, scans without error, every number takes the exact fast
 * path, every value is finite with xmin <= xmax and ymin <= ymax, and every image id is
 * a key of `table` (an id_table); its rows are then appended to the columns and
 * counts[i] is their number. Otherwise status[i] = 1 and nothing is appended: the
 * caller reads that file with the reference path, which decides and names any problem.
 *   status: bytes, uint8 per file; counts: bytes, int64 per file
 *   scores: bytearray, float64 per row; boxes: bytearray, 4 float64 per row
 *   image_idx: bytearray, int64 per row (positions in the table)
 */
static PyObject *
scan_detection_files(PyObject *self, PyObject *args)
{
    PyObject *paths_arg, *table_arg, *paths = NULL, *result = NULL;
    PyObject *status_b = NULL, *counts_b = NULL, *out[3] = {NULL, NULL, NULL};
    const id_table_t *table;
    Py_ssize_t n, k, max_rows = 0, max_file_rows = 1, total = 0;
    const char **cpath = NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, len;
    scan_t st;
    int64_t *scratch = NULL;
    char *status;
    int64_t *counts;
    double *scores, *boxes;
    int64_t *img;
    int nomem = 0;
    (void)self;

    memset(&st, 0, sizeof st);
    if (!PyArg_ParseTuple(args, "OO:scan_detection_files", &paths_arg, &table_arg))
        return NULL;
    table = (const id_table_t *)PyCapsule_GetPointer(table_arg, ID_TABLE_CAPSULE);
    if (table == NULL)
        return NULL;
    n = encode_paths(paths_arg, &paths, &cpath);
    if (n < 0)
        return NULL;
    status_b = PyBytes_FromStringAndSize(NULL, n);
    counts_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (status_b == NULL || counts_b == NULL)
        goto done;
    for (k = 0; k < n; k++) {
        struct stat sb;
        /* room for the rows the file can hold at its current size (a row takes >= 12
         * bytes with its line end); a file that grows falls back */
        if (stat(cpath[k], &sb) == 0 && S_ISREG(sb.st_mode)) {
            Py_ssize_t rows = (Py_ssize_t)(sb.st_size / 12) + 1;
            if (rows > PY_SSIZE_T_MAX / 64 - max_rows) {
                PyErr_NoMemory();
                goto done;
            }
            max_rows += rows;
            if (rows > max_file_rows)
                max_file_rows = rows;
        }
    }
    out[0] = PyByteArray_FromStringAndSize(NULL, max_rows * (Py_ssize_t)sizeof(double));
    out[1] = PyByteArray_FromStringAndSize(NULL, max_rows * 4 * (Py_ssize_t)sizeof(double));
    out[2] = PyByteArray_FromStringAndSize(NULL, max_rows * (Py_ssize_t)sizeof(int64_t));
    scratch = (int64_t *)PyMem_RawMalloc((size_t)max_file_rows * 3 * sizeof(int64_t));
    if (out[0] == NULL || out[1] == NULL || out[2] == NULL || scratch == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    status = PyBytes_AS_STRING(status_b);
    counts = (int64_t *)PyBytes_AS_STRING(counts_b);
    scores = (double *)PyByteArray_AS_STRING(out[0]);
    boxes = (double *)PyByteArray_AS_STRING(out[1]);
    img = (int64_t *)PyByteArray_AS_STRING(out[2]);
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < n; k++) {
        Py_ssize_t rows, r;
        int ok;
        status[k] = 1;
        counts[k] = 0;
        if (xs_read_file_limit(cpath[k], &buf, &cap, &len, (size_t)-1) != 0)
            continue;
        if (len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF) {
            /* a UTF-8 byte-order mark (files written on Windows): skipped */
            memmove(buf, buf + 3, len - 3);
            len -= 3;
        }
        rows = (Py_ssize_t)(len / 12) + 1;
        if (rows > max_file_rows || rows > max_rows - total || memchr(buf, 0, len) != NULL)
            continue;
        if (xs_grow((void **)&buf, &cap, len + 1 + 16, 1) < 0) { /* the SWAR padding */
            nomem = 1;
            break;
        }
        st.values = NULL;
        st.score = scores + total;
        st.box = boxes + 4 * total;
        st.image_idx = img + total;
        st.id_start = scratch;
        st.id_len = scratch + max_file_rows;
        st.line = scratch + 2 * max_file_rows;
        st.table = table;
        st.rows = 0;
        st.nslow = 0;
        st.err_kind = ERR_NONE;
        scan_padded((const char *)buf, (Py_ssize_t)len, &st);
        if (st.err_kind == ERR_NOMEM) {
            nomem = 1;
            break;
        }
        if (st.err_kind != ERR_NONE || st.nslow != 0)
            continue;
        ok = 1;
        for (r = 0; r < st.rows && ok; r++) {
            const double *b = st.box + 4 * r;
            double sc = st.score[r];
            if (st.image_idx[r] < 0 || sc - sc != 0.0 || b[0] - b[0] != 0.0 ||
                b[1] - b[1] != 0.0 || b[2] - b[2] != 0.0 || b[3] - b[3] != 0.0 ||
                b[2] < b[0] || b[3] < b[1])
                ok = 0; /* unknown id, inf/nan, or xmax < xmin */
        }
        if (!ok)
            continue;
        status[k] = 0;
        counts[k] = st.rows;
        total += st.rows;
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyByteArray_Resize(out[0], total * (Py_ssize_t)sizeof(double)) < 0 ||
        PyByteArray_Resize(out[1], total * 4 * (Py_ssize_t)sizeof(double)) < 0 ||
        PyByteArray_Resize(out[2], total * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto done;
    result = PyTuple_Pack(5, status_b, counts_b, out[0], out[1], out[2]);
done:
    for (k = 0; k < 3; k++)
        Py_XDECREF(out[k]);
    Py_XDECREF(status_b);
    Py_XDECREF(counts_b);
    Py_XDECREF(paths);
    PyMem_Free((void *)cpath);
    PyMem_RawFree(buf);
    PyMem_RawFree(scratch);
    PyMem_RawFree(st.slow);
    PyMem_RawFree(st.slow_len);
    return result;
}

#endif /* DETEVAL_TEXTSCAN_DETECTION_FILES_H */
