/* deteval._textscan: reading annotation files from disk and scanning them into columns (scan_voc_files).
 *
 * Reference (Python): deteval.io.voc._scanned_objects (read_input + lxml).
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_VOC_FILES_H
#define DETEVAL_TEXTSCAN_VOC_FILES_H

/* ---- scan_voc_files: read the annotation files and scan them into columns ----------
 *
 * scan_voc_files(paths) -> (fallback, counts, names, name_idx, boxes, difficult, ok)
 *
 * paths: a sequence of str/bytes/os.PathLike. Each file is read here (without the GIL);
 * a file that cannot be opened or read, is not a regular file, is larger than
 * XS_MAXFILE or lies outside the subset of scan_voc_annotations gets fallback[i] = 1
 * and no objects (the caller reads it with Python and lxml, which raises the precise
 * error). For the other files, one row per <object> in document order:
 *   counts: bytes, n_files int64 (objects per file)
 *   names: list of str, distinct normalize-space(name) values (may hold names of
 *          files that fell back: use the indices that occur)
 *   name_idx: bytes, int64 per object (-1 when ok is 0)
 *   boxes: bytes, 4 float64 per object (xmin ymin xmax ymax; meaningless when ok is 0)
 *   difficult: bytes, uint8 per object
 *   ok: bytes, uint8 per object: count(name) = count(bndbox) = 1, a non-empty name,
 *       four coordinates float() reads exactly by the fast path (finite), xmin <= xmax
 *       and ymin <= ymax. A file with an object that is not ok must be re-read by the
 *       reference reader, which accepts it or names the problem.
 */

/* the whole file (at most `limit` bytes) into *buf (capacity *cap, NUL-terminated);
 * 0 on success */
static int
xs_read_file_limit(const char *path, unsigned char **buf, size_t *cap, size_t *len,
                   size_t limit)
{
    size_t n = 0;
#ifdef _WIN32
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    for (;;) {
        size_t got;
        if (n + 65536 + 1 > *cap && xs_grow((void **)buf, cap, n + 65536 + 1, 1) < 0) {
            fclose(f);
            return -1;
        }
        got = fread(*buf + n, 1, *cap - n - 1, f);
        n += got;
        if (n > limit) {
            fclose(f);
            return -1;
        }
        if (got == 0) {
            int bad = ferror(f);
            fclose(f);
            if (bad)
                return -1;
            break;
        }
    }
#else
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > limit) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t got;
        size_t need;
        /* room for the expected size, one more byte to see the end, and the NUL */
        need = n + 4097;
        if (need < (size_t)st.st_size + 2)
            need = (size_t)st.st_size + 2;
        if (xs_grow((void **)buf, cap, need, 1) < 0) {
            close(fd);
            return -1;
        }
        got = read(fd, *buf + n, *cap - n - 1);
        if (got < 0) {
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > limit) {
            close(fd);
            return -1;
        }
    }
    close(fd);
#endif
    if (*buf == NULL && xs_grow((void **)buf, cap, 1, 1) < 0)
        return -1;
    (*buf)[n] = 0;
    *len = n;
    return 0;
}

/* The paths of a sequence (str, bytes, os.PathLike) in the filesystem encoding: *paths,
 * a new tuple owning the encoded bytes (keep it while the GIL is released), and *cpath,
 * their char pointers (PyMem_Free it). Returns their number, or -1 with an error set
 * (including a path with an embedded NUL, which PyUnicode_FSConverter refuses). */
static Py_ssize_t
encode_paths(PyObject *arg, PyObject **paths, const char ***cpath)
{
    PyObject *seq = PySequence_Tuple(arg);
    Py_ssize_t n, k;
    *paths = NULL;
    *cpath = NULL;
    if (seq == NULL)
        return -1;
    n = PyTuple_GET_SIZE(seq);
    *paths = PyTuple_New(n);
    *cpath = (const char **)PyMem_Malloc(sizeof(**cpath) * (size_t)(n ? n : 1));
    if (*paths == NULL || *cpath == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail;
    }
    for (k = 0; k < n; k++) {
        PyObject *enc = NULL;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(seq, k), &enc))
            goto fail;
        PyTuple_SET_ITEM(*paths, k, enc);
        (*cpath)[k] = PyBytes_AS_STRING(enc);
    }
    Py_DECREF(seq);
    return n;
fail:
    Py_DECREF(seq);
    Py_CLEAR(*paths);
    PyMem_Free((void *)*cpath);
    *cpath = NULL;
    return -1;
}

static PyObject *
scan_voc_files(PyObject *self, PyObject *arg)
{
    PyObject *paths = NULL, *result = NULL, *names = NULL;
    PyObject *fb_bytes = NULL, *counts_bytes = NULL;
    Py_ssize_t n, k;
    const char **cpath = NULL;
    char *fb;
    int64_t *counts;
    unsigned char *buf = NULL;
    size_t cap = 0, len, before;
    xs_cols cols;
    xs_sink sink = {NULL, &cols};
    (void)self;

    memset(&cols, 0, sizeof cols);
    n = encode_paths(arg, &paths, &cpath);
    if (n < 0)
        return NULL;
    fb_bytes = PyBytes_FromStringAndSize(NULL, n);
    counts_bytes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (fb_bytes == NULL || counts_bytes == NULL)
        goto done;
    fb = PyBytes_AS_STRING(fb_bytes);
    counts = (int64_t *)PyBytes_AS_STRING(counts_bytes);
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < n && !cols.oom; k++) {
        before = cols.n;
        if (xs_read_file_limit(cpath[k], &buf, &cap, &len, XS_MAXFILE) != 0)
            fb[k] = 1;
        else
            fb[k] = (char)xs_scan_one(buf, len, (long)(k + 1), &sink);
        counts[k] = (int64_t)(cols.n - before);
    }
    Py_END_ALLOW_THREADS
    if (cols.oom) {
        PyErr_NoMemory();
        goto done;
    }
    names = PyList_New((Py_ssize_t)cols.n_names);
    if (names == NULL)
        goto done;
    for (k = 0; k < (Py_ssize_t)cols.n_names; k++) {
        PyObject *s = PyUnicode_DecodeASCII(cols.arena + cols.name_off[k],
                                            (Py_ssize_t)cols.name_len[k], NULL);
        if (s == NULL)
            goto done;
        PyList_SET_ITEM(names, k, s);
    }
    result = Py_BuildValue(
        "(OONy#y#y#y#)", fb_bytes, counts_bytes, names,
        (const char *)(cols.name_idx ? (void *)cols.name_idx : (void *)""),
        (Py_ssize_t)(cols.n * sizeof(int64_t)),
        (const char *)(cols.boxes ? (void *)cols.boxes : (void *)""),
        (Py_ssize_t)(cols.n * 4 * sizeof(double)),
        (const char *)(cols.difficult ? (void *)cols.difficult : (void *)""),
        (Py_ssize_t)cols.n,
        (const char *)(cols.ok ? (void *)cols.ok : (void *)""), (Py_ssize_t)cols.n);
    names = NULL; /* the N format stole it */
done:
    Py_XDECREF(names);
    Py_XDECREF(fb_bytes);
    Py_XDECREF(counts_bytes);
    Py_XDECREF(paths);
    PyMem_Free((void *)cpath);
    PyMem_RawFree(buf);
    PyMem_RawFree(cols.boxes);
    PyMem_RawFree(cols.name_idx);
    PyMem_RawFree(cols.difficult);
    PyMem_RawFree(cols.ok);
    PyMem_RawFree(cols.arena);
    PyMem_RawFree(cols.name_off);
    PyMem_RawFree(cols.name_len);
    PyMem_RawFree(cols.hash);
    PyMem_RawFree(cols.tmp);
    return result;
}

#endif /* DETEVAL_TEXTSCAN_VOC_FILES_H */
