/* Flat JSON objects (one per record) into Arrow's buffers, one column per field of the target type.
 *
 * Arrow's JSON reader needs the records joined into lines and parses every value into its own
 * builders: ~0.3-0.4 s of CPU per 500k pageview values, the largest cost left in reading Kafka.
 * The values the pageview job and most users send are flat objects of strings, integers and
 * booleans; this file parses exactly those, straight from the records' bytes, and declines the
 * whole batch (returns None) at the first thing it does not take on: an escape sequence or a
 * control character in a string, a key that is not ASCII, a nested value, a repeated field, a
 * number that does not fit its field, text after the object, anything that is not JSON. Declined
 * batches go to Arrow's JSON reader and then to the per-record path, which names the records it
 * rejects; the parser never decides what a bad record means. String values are copied as they
 * are: the caller checks them as UTF-8 (Arrow's validate), and a batch that fails goes the same
 * way. Fields missing from an object, and JSON nulls, are nulls; fields the target does not have
 * are skipped, as json.loads + pyarrow ignore them.
 *
 * The GIL is released while parsing. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_STRING = 0, KIND_INT8, KIND_INT16, KIND_INT32, KIND_INT64, KIND_BOOL };
enum { MAX_FIELDS = 64 };

typedef struct {
    const char *name;
    Py_ssize_t name_len;
    int kind;
    int64_t min, max;
    uint8_t *validity; /* bitmap, 1 = valid */
    int64_t nulls;
    uint8_t *values; /* fixed width, or bitmap for booleans, or int32 offsets for strings */
    char *data;      /* strings' bytes */
    int64_t data_len;
} Column;

typedef struct {
    const char *p, *end;
} Cursor;

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_ws(Cursor *c) {
    while (c->p < c->end && is_ws(*c->p)) c->p++;
}

static int take(Cursor *c, char want) {
    skip_ws(c);
    if (c->p < c->end && *c->p == want) {
        c->p++;
        return 1;
    }
    return 0;
}

static int literal(Cursor *c, const char *word, size_t len) {
    if ((size_t)(c->end - c->p) < len || memcmp(c->p, word, len) != 0) return 0;
    c->p += len;
    return 1;
}

/* A string's body after its opening quote, up to (not including) the closing one, which is
 * consumed. 0 for an escape, a control character, a missing end, or (when ascii_only) a byte over
 * 0x7f: a key or a skipped string that is not ASCII might not be UTF-8, which json.loads refuses. */
static int string_body(Cursor *c, const char **start, Py_ssize_t *len, int ascii_only) {
    const char *s = c->p;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            *start = s;
            *len = c->p - s;
            c->p++;
            return 1;
        }
        if (ch == '\\' || ch < 0x20 || (ascii_only && ch > 0x7f)) return 0;
        c->p++;
    }
    return 0;
}

/* A JSON integer (RFC 8259: -?(0|[1-9][0-9]*)) within [min, max]; 0 for a fraction or exponent
 * (json.loads makes a float of it, which an integer field refuses), leading zeros, or overflow. */
static int integer(Cursor *c, int64_t min, int64_t max, int64_t *out) {
    int negative = c->p < c->end && *c->p == '-';
    if (negative) c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9') return 0;
    /* accumulate as a negative number: -2^63 has no positive counterpart */
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p - '0';
        if (v < (INT64_MIN + d) / 10) return 0;
        v = v * 10 - d;
        c->p++;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E')) return 0;
    if (!negative) {
        if (v == INT64_MIN) return 0;
        v = -v;
    }
    if (v < min || v > max) return 0;
    *out = v;
    return 1;
}

/* Any JSON number, for a skipped field: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int skip_number(Cursor *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    if (*c->p == '0') {
        c->p++;
        if (c->p < c->end && *c->p >= '0' && *c->p <= '9') return 0;
    } else {
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    }
    return 1;
}

/* A value of a field the target does not have: a string (ASCII, no escapes), number, true, false
 * or null. Objects and arrays are declined rather than skipped: rare, and their depth unbounded. */
static int skip_value(Cursor *c) {
    if (c->p >= c->end) return 0;
    const char *s;
    Py_ssize_t n;
    switch (*c->p) {
    case '"':
        c->p++;
        return string_body(c, &s, &n, 1);
    case 't':
        return literal(c, "true", 4);
    case 'f':
        return literal(c, "false", 5);
    case 'n':
        return literal(c, "null", 4);
    default:
        return skip_number(c);
    }
}

static void set_bit(uint8_t *bitmap, int64_t i) { bitmap[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* The column's data has room for every record's bytes (a string is part of one record), and the
 * records' int32 offsets bound the total, so neither a check nor a reallocation is needed here. */
static void append_string(Column *col, int64_t row, const char *s, Py_ssize_t len) {
    memcpy(col->data + col->data_len, s, (size_t)len);
    col->data_len += len;
    ((int32_t *)col->values)[row + 1] = (int32_t)col->data_len;
}

static void set_integer(Column *col, int64_t row, int64_t v) {
    switch (col->kind) {
    case KIND_INT8: ((int8_t *)col->values)[row] = (int8_t)v; break;
    case KIND_INT16: ((int16_t *)col->values)[row] = (int16_t)v; break;
    case KIND_INT32: ((int32_t *)col->values)[row] = (int32_t)v; break;
    default: ((int64_t *)col->values)[row] = v; break;
    }
}

/* A matched field's value into its column: 1 taken, 0 declined. */
static int field_value(Cursor *c, Column *col, int64_t row) {
    if (c->p < c->end && *c->p == 'n') return literal(c, "null", 4); /* null: validity bit stays 0 */
    const char *s;
    Py_ssize_t n;
    int64_t v;
    switch (col->kind) {
    case KIND_STRING:
        if (c->p >= c->end || *c->p != '"') return 0;
        c->p++;
        if (!string_body(c, &s, &n, 0)) return 0;
        append_string(col, row, s, n);
        break;
    case KIND_BOOL:
        if (literal(c, "true", 4))
            set_bit(col->values, row);
        else if (!literal(c, "false", 5))
            return 0;
        break;
    default:
        if (!integer(c, col->min, col->max, &v)) return 0;
        set_integer(col, row, v);
    }
    set_bit(col->validity, row);
    return 1;
}

static int find_field(Column *cols, int count, const char *key, Py_ssize_t len) {
    for (int i = 0; i < count; i++)
        if (cols[i].name_len == len && memcmp(cols[i].name, key, (size_t)len) == 0) return i;
    return -1;
}

/* One record, one object: 1 parsed into row, 0 declined. */
static int object(const char *start, const char *end, Column *cols, int count, int64_t row) {
    Cursor c = {start, end};
    uint64_t seen = 0;
    if (!take(&c, '{')) return 0;
    if (!take(&c, '}')) {
        do {
            const char *key;
            Py_ssize_t key_len;
            if (!take(&c, '"') || !string_body(&c, &key, &key_len, 1) || !take(&c, ':')) return 0;
            skip_ws(&c);
            int f = find_field(cols, count, key, key_len);
            if (f < 0) {
                if (!skip_value(&c)) return 0;
                continue;
            }
            if (seen & (1ull << f)) return 0; /* a repeated field: json.loads keeps the last, say so there */
            seen |= 1ull << f;
            if (!field_value(&c, &cols[f], row)) return 0;
        } while (take(&c, ','));
        if (!take(&c, '}')) return 0;
    }
    skip_ws(&c);
    return c.p == c.end;
}

static int valid_at(const uint8_t *validity, int64_t i) { return validity == NULL || (validity[i >> 3] >> (i & 7)) & 1; }

static int kind_width(int kind) {
    switch (kind) {
    case KIND_INT8: return 1;
    case KIND_INT16: return 2;
    case KIND_INT32: return 4;
    case KIND_INT64: return 8;
    default: return 0;
    }
}

static void free_columns(Column *cols, int count) {
    for (int i = 0; i < count; i++) {
        free(cols[i].validity);
        free(cols[i].values);
        free(cols[i].data);
    }
}

/* parse(data, offsets, validity_or_None, rows, fields) -> None, or one tuple per field:
 * (validity bytes, null count, values bytes[, string data bytes]).
 * data: the records' bytes; offsets: rows + 1 int32 offsets into it (Arrow's binary layout, the
 * array's slice offset already applied); validity: the records' bitmap (a null record is a null
 * row), or None; fields: [(name bytes, kind int)], kind as the enum above. */
static PyObject *parse(PyObject *self, PyObject *args) {
    Py_buffer data, offsets;
    PyObject *validity_obj, *fields;
    Py_ssize_t rows;
    if (!PyArg_ParseTuple(args, "y*y*OnO!", &data, &offsets, &validity_obj, &rows, &PyList_Type, &fields)) return NULL;
    Py_buffer validity = {0};
    int has_validity = validity_obj != Py_None;
    PyObject *result = NULL;
    Column cols[MAX_FIELDS];
    int count = (int)PyList_GET_SIZE(fields);
    memset(cols, 0, sizeof cols);
    if (has_validity && PyObject_GetBuffer(validity_obj, &validity, PyBUF_SIMPLE) < 0) goto done_buffers;
    if (count > MAX_FIELDS || offsets.len < (rows + 1) * 4 || (has_validity && validity.len < (rows + 7) / 8)) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    for (int i = 0; i < count; i++) {
        PyObject *field = PyList_GET_ITEM(fields, i);
        int kind;
        if (!PyArg_ParseTuple(field, "y#i", &cols[i].name, &cols[i].name_len, &kind)) goto done;
        cols[i].kind = kind;
        int width = kind_width(kind);
        if (width) {
            cols[i].max = width == 8 ? INT64_MAX : ((int64_t)1 << (8 * width - 1)) - 1;
            cols[i].min = -cols[i].max - 1;
        }
        size_t bitmap = (size_t)(rows + 7) / 8 + 1;
        size_t values = kind == KIND_STRING ? (size_t)(rows + 1) * 4 : kind == KIND_BOOL ? bitmap : (size_t)rows * width + 1;
        cols[i].validity = calloc(bitmap, 1);
        cols[i].values = calloc(values, 1);
        if (kind == KIND_STRING) cols[i].data = malloc((size_t)data.len + 1); /* untouched pages cost nothing */
        if (cols[i].validity == NULL || cols[i].values == NULL || (kind == KIND_STRING && cols[i].data == NULL)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const int32_t *bounds = offsets.buf;
    const char *bytes = data.buf;
    const uint8_t *valid = has_validity ? validity.buf : NULL;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t row = 0; ok && row < rows; row++) {
        int32_t from = bounds[row], to = bounds[row + 1];
        if (from < 0 || to < from || to > data.len) {
            ok = 0;
            break;
        }
        if (valid_at(valid, row)) ok = object(bytes + from, bytes + to, cols, count, row);
        for (int i = 0; i < count; i++) { /* a null row or field: the string's offsets do not move */
            if (cols[i].kind == KIND_STRING && !valid_at(cols[i].validity, row))
                ((int32_t *)cols[i].values)[row + 1] = ((int32_t *)cols[i].values)[row];
        }
    }
    Py_END_ALLOW_THREADS;
    if (!ok) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    result = PyTuple_New(count);
    if (result == NULL) goto done;
    for (int i = 0; i < count; i++) {
        Column *col = &cols[i];
        int64_t nulls = 0;
        for (Py_ssize_t row = 0; row < rows; row++) nulls += !valid_at(col->validity, row);
        Py_ssize_t bitmap = (rows + 7) / 8;
        Py_ssize_t values = col->kind == KIND_STRING ? (rows + 1) * 4 : col->kind == KIND_BOOL ? bitmap : rows * kind_width(col->kind);
        PyObject *item = col->kind == KIND_STRING
                             ? Py_BuildValue("(y#Ly#y#)", col->validity, bitmap, (long long)nulls, col->values, values, col->data ? col->data : "", (Py_ssize_t)col->data_len)
                             : Py_BuildValue("(y#Ly#)", col->validity, bitmap, (long long)nulls, col->values, values);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, i, item);
    }
done:
    free_columns(cols, count < MAX_FIELDS ? count : MAX_FIELDS);
    if (has_validity) PyBuffer_Release(&validity);
done_buffers:
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", parse, METH_VARARGS, "Flat JSON objects into Arrow buffers per field, or None when the batch needs a general parser."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_json_columns", NULL, -1, methods};

PyMODINIT_FUNC PyInit__json_columns(void) { return PyModule_Create(&module); }
