/* One Kafka partition's offset range into Arrow's buffers, with no Python object per record.
 *
 * What sinks/kafka.py's read_range does, in C: librdkafka's consumer (the library the
 * confluent-kafka wheel bundles, opened with dlopen by its path, so nothing is linked at build
 * time), assigned at the range's start, read_committed, polled until the consumer's position
 * reaches the range's end, and kept for the partition's next range (which starts where this one
 * ended: librdkafka fetches it while the batch is processed); each record's offset, timestamp,
 * key, value and headers appended to
 * growing buffers laid out as Arrow's (validity bitmaps, int32 offsets, data). Python receives one
 * bytes object per buffer and wraps them as Arrow arrays without copying them
 * (sinks/_internal/kafka_arrow.py). The GIL is released while polling.
 *
 * Python per-record objects were the cost: confluent-kafka makes a Message per record and five
 * method calls read it, ~80k records/s per partition, where librdkafka itself delivers several
 * times that. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* librdkafka's public ABI (rdkafka.h), only what this file uses. */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct {
    int err;
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *private_;
} rd_kafka_message_t;
typedef struct {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    int err;
    void *private_;
} rd_kafka_topic_partition_t;
typedef struct rd_kafka_topic_partition_list_s rd_kafka_topic_partition_list_t;

enum {
    CONSUMER = 1,
    CONF_OK = 0,
    ERR_NO_ERROR = 0,
    ERR_OFFSET_OUT_OF_RANGE = 1,
    ERR_PARTITION_EOF = -191,
    ERR_AUTO_OFFSET_RESET = -140,
    TIMESTAMP_NOT_AVAILABLE = 0,
};

static struct {
    rd_kafka_conf_t *(*conf_new)(void);
    int (*conf_set)(rd_kafka_conf_t *, const char *, const char *, char *, size_t);
    void (*conf_destroy)(rd_kafka_conf_t *);
    rd_kafka_t *(*new_)(int, rd_kafka_conf_t *, char *, size_t);
    int (*poll_set_consumer)(rd_kafka_t *);
    rd_kafka_topic_partition_list_t *(*list_new)(int);
    rd_kafka_topic_partition_t *(*list_add)(rd_kafka_topic_partition_list_t *, const char *, int32_t);
    void (*list_destroy)(rd_kafka_topic_partition_list_t *);
    int (*assign)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    int (*position)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    rd_kafka_queue_t *(*queue_get_consumer)(rd_kafka_t *);
    long (*consume_batch_queue)(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
    void (*queue_destroy)(rd_kafka_queue_t *);
    void (*message_destroy)(rd_kafka_message_t *);
    int64_t (*message_timestamp)(const rd_kafka_message_t *, int *);
    int (*message_headers)(const rd_kafka_message_t *, rd_kafka_headers_t **);
    int (*header_get_all)(const rd_kafka_headers_t *, size_t, const char **, const void **, size_t *);
    int (*consumer_close)(rd_kafka_t *);
    void (*destroy)(rd_kafka_t *);
    const char *(*err2str)(int);
} rk;
static int rk_loaded = 0;

static PyObject *open_library(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        PyErr_Format(PyExc_OSError, "cannot open librdkafka at %s: %s", path, dlerror());
        return NULL;
    }
#define LOAD(field, symbol)                                                                         \
    if ((*(void **)&rk.field = dlsym(lib, symbol)) == NULL) {                                       \
        PyErr_Format(PyExc_OSError, "librdkafka at %s has no %s", path, symbol);                   \
        return NULL;                                                                                \
    }
    LOAD(conf_new, "rd_kafka_conf_new")
    LOAD(conf_set, "rd_kafka_conf_set")
    LOAD(conf_destroy, "rd_kafka_conf_destroy")
    LOAD(new_, "rd_kafka_new")
    LOAD(poll_set_consumer, "rd_kafka_poll_set_consumer")
    LOAD(list_new, "rd_kafka_topic_partition_list_new")
    LOAD(list_add, "rd_kafka_topic_partition_list_add")
    LOAD(list_destroy, "rd_kafka_topic_partition_list_destroy")
    LOAD(assign, "rd_kafka_assign")
    LOAD(position, "rd_kafka_position")
    LOAD(queue_get_consumer, "rd_kafka_queue_get_consumer")
    LOAD(consume_batch_queue, "rd_kafka_consume_batch_queue")
    LOAD(queue_destroy, "rd_kafka_queue_destroy")
    LOAD(message_destroy, "rd_kafka_message_destroy")
    LOAD(message_timestamp, "rd_kafka_message_timestamp")
    LOAD(message_headers, "rd_kafka_message_headers")
    LOAD(header_get_all, "rd_kafka_header_get_all")
    LOAD(consumer_close, "rd_kafka_consumer_close")
    LOAD(destroy, "rd_kafka_destroy")
    LOAD(err2str, "rd_kafka_err2str")
#undef LOAD
    rk_loaded = 1;
    Py_RETURN_NONE;
}

/* A growing byte buffer. `failed` is set once an allocation fails (or a column passes 2 GiB, the
 * most int32 offsets address), and every later append is a no-op; per thread, as reads on several
 * threads run at once with the GIL released. */
typedef struct {
    char *data;
    size_t len, cap;
} Buffer;
static __thread int failed = 0;

static void append(Buffer *b, const void *src, size_t n) {
    if (failed || n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (grown == NULL) {
            failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void append_int32(Buffer *b, int32_t v) { append(b, &v, sizeof v); }
static void append_int64(Buffer *b, int64_t v) { append(b, &v, sizeof v); }

/* Arrow's validity bitmap: bit i of byte i / 8, least significant first. */
static void append_bit(Buffer *b, int64_t i, int valid) {
    if (i % 8 == 0) append(b, "", 1);
    if (valid && !failed) b->data[i / 8] |= (char)(1 << (i % 8));
}

/* A variable-length column: validity, int32 offsets (n + 1 of them), data. */
typedef struct {
    Buffer validity, offsets, data;
    int64_t nulls;
} Binary;

static void binary_init(Binary *c) { append_int32(&c->offsets, 0); }

static void binary_append(Binary *c, int64_t row, const void *src, size_t n, int valid) {
    append_bit(&c->validity, row, valid);
    if (!valid) c->nulls++;
    append(&c->data, src, n);
    if (c->data.len > INT32_MAX) failed = 1;
    append_int32(&c->offsets, (int32_t)c->data.len);
}

static PyObject *buffer_bytes(Buffer *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len); }
static PyObject *binary_tuple(Binary *c) {
    return Py_BuildValue("(NNNL)", buffer_bytes(&c->validity), buffer_bytes(&c->offsets), buffer_bytes(&c->data), (long long)c->nulls);
}
static void binary_free(Binary *c) {
    free(c->validity.data);
    free(c->offsets.data);
    free(c->data.data);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Outcomes, as read_range in Python names them. */
enum { READ_OK = 0, READ_OFFSET_OUT_OF_RANGE = 1, READ_KAFKA_ERROR = 2, READ_TIMED_OUT = 3, READ_CONFIG_ERROR = 4, READ_NO_MEMORY = 5 };

/* Records taken from librdkafka's queue at once: one lock and wake-up per batch instead of per
 * record (rd_kafka_consumer_poll takes them one by one). */
#define HELD 1024

/* A consumer of one partition, kept between reads: librdkafka goes on fetching the records after
 * a range while the batch that read it is processed, so the next range (which starts where this
 * one ended) is mostly in its queue already, and no read pays for a client, a connection and
 * metadata. Records taken from the queue past a range's end are held for the next read. */
typedef struct {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;       /* the consumer's queue, where the partition's records arrive */
    char *topic;
    int partition;
    int64_t next;                  /* the offset the next read continues from; -1: assign first */
    rd_kafka_message_t *held[HELD];/* taken from the queue, not yet read: held[at..count) */
    long at, count;
    pid_t pid;                     /* the process whose threads the client runs on */
} Consumer;

static const char *CAPSULE = "deltastreams.kafka_range.Consumer";

static void drop_held(Consumer *c) {
    for (long i = c->at; i < c->count; i++) rk.message_destroy(c->held[i]);
    c->at = c->count = 0;
}

/* Leave the partition and free the client (a closed consumer has rk NULL). */
static void consumer_release(Consumer *c) {
    if (c->pid != getpid()) c->rk = NULL, c->queue = NULL, c->at = c->count = 0;  /* a forked copy: its threads are not here; left as is */
    drop_held(c);
    if (c->queue) rk.queue_destroy(c->queue);
    c->queue = NULL;
    if (c->rk) {
        rk.consumer_close(c->rk);
        rk.destroy(c->rk);
    }
    c->rk = NULL;
}

static void consumer_free(Consumer *c) {
    consumer_release(c);
    free(c->topic);
    free(c);
}

static void capsule_destructor(PyObject *capsule) {
    Consumer *c = PyCapsule_GetPointer(capsule, CAPSULE);
    if (c != NULL) consumer_free(c);
}

/* open_consumer(settings, topic, partition) -> (status, message, consumer or None)
 * settings: a sequence of (name, value) strings for librdkafka. */
static PyObject *open_consumer(PyObject *self, PyObject *args) {
    PyObject *settings;
    const char *topic;
    int partition;
    if (!PyArg_ParseTuple(args, "Osi", &settings, &topic, &partition)) return NULL;
    if (!rk_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "open_library() first");
        return NULL;
    }
    char errstr[512] = "";
    rd_kafka_conf_t *conf = rk.conf_new();
    PyObject *items = PySequence_Fast(settings, "settings must be a sequence of (name, value) pairs");
    if (items == NULL) {
        rk.conf_destroy(conf);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); i++) {
        const char *name, *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "ss", &name, &value)) {
            Py_DECREF(items);
            rk.conf_destroy(conf);
            return NULL;
        }
        if (rk.conf_set(conf, name, value, errstr, sizeof errstr) != CONF_OK) {
            Py_DECREF(items);
            rk.conf_destroy(conf);
            return Py_BuildValue("(iNO)", READ_CONFIG_ERROR, PyUnicode_DecodeUTF8(errstr, (Py_ssize_t)strlen(errstr), "replace"), Py_None);
        }
    }
    Py_DECREF(items);
    Consumer *c = calloc(1, sizeof *c);
    char *name = strdup(topic);
    if (c == NULL || name == NULL) {
        free(c);
        free(name);
        rk.conf_destroy(conf);
        return PyErr_NoMemory();
    }
    c->topic = name;
    c->partition = partition;
    c->next = -1;
    c->pid = getpid();
    Py_BEGIN_ALLOW_THREADS
    c->rk = rk.new_(CONSUMER, conf, errstr, sizeof errstr);  /* owns conf from here */
    if (c->rk == NULL) rk.conf_destroy(conf);
    else {
        rk.poll_set_consumer(c->rk);
        c->queue = rk.queue_get_consumer(c->rk);
    }
    Py_END_ALLOW_THREADS
    if (c->rk == NULL) {
        consumer_free(c);
        return Py_BuildValue("(iNO)", READ_CONFIG_ERROR, PyUnicode_DecodeUTF8(errstr, (Py_ssize_t)strlen(errstr), "replace"), Py_None);
    }
    PyObject *capsule = PyCapsule_New(c, CAPSULE, capsule_destructor);
    if (capsule == NULL) {
        consumer_free(c);
        return NULL;
    }
    return Py_BuildValue("(isN)", READ_OK, "", capsule);
}

/* close_consumer(consumer): leave the partition and free the client now (else when the capsule
 * is collected). */
static PyObject *close_consumer(PyObject *self, PyObject *args) {
    PyObject *capsule;
    if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
    Consumer *c = PyCapsule_GetPointer(capsule, CAPSULE);
    if (c == NULL) return NULL;
    Py_BEGIN_ALLOW_THREADS
    consumer_release(c);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* Columns of one range being read. */
typedef struct {
    Buffer offsets, stamps;
    Binary keys, values, names, header_values;
    Buffer header_validity, header_offsets;
    int64_t rows, header_nulls;
    int32_t headers_total;
} Columns;

static void columns_init(Columns *r) {
    memset(r, 0, sizeof *r);
    binary_init(&r->keys);
    binary_init(&r->values);
    binary_init(&r->names);
    binary_init(&r->header_values);
    append_int32(&r->header_offsets, 0);
}

static void columns_free(Columns *r) {
    free(r->offsets.data);
    free(r->stamps.data);
    binary_free(&r->keys);
    binary_free(&r->values);
    binary_free(&r->names);
    binary_free(&r->header_values);
    free(r->header_validity.data);
    free(r->header_offsets.data);
}

static void columns_append(Columns *r, const rd_kafka_message_t *m) {
    int type = TIMESTAMP_NOT_AVAILABLE;
    int64_t stamp = rk.message_timestamp(m, &type);
    append_int64(&r->offsets, m->offset);
    append_int64(&r->stamps, type == TIMESTAMP_NOT_AVAILABLE ? -1 : stamp);
    binary_append(&r->keys, r->rows, m->key, m->key ? m->key_len : 0, m->key != NULL);
    binary_append(&r->values, r->rows, m->payload, m->payload ? m->len : 0, m->payload != NULL);
    rd_kafka_headers_t *headers = NULL;
    size_t count = 0;
    if (rk.message_headers(m, &headers) == ERR_NO_ERROR) {
        const char *name;
        const void *value;
        size_t size;
        for (; rk.header_get_all(headers, count, &name, &value, &size) == ERR_NO_ERROR; count++) {
            binary_append(&r->names, r->headers_total, name, strlen(name), 1);
            binary_append(&r->header_values, r->headers_total, value, value ? size : 0, 1);
            r->headers_total++;
        }
    }
    append_bit(&r->header_validity, r->rows, count > 0);  /* no headers: null, as in Python */
    if (count == 0) r->header_nulls++;
    append_int32(&r->header_offsets, r->headers_total);
    r->rows++;
}

static int64_t position(Consumer *c) {
    rd_kafka_topic_partition_list_t *where = rk.list_new(1);
    rd_kafka_topic_partition_t *p = rk.list_add(where, c->topic, c->partition);
    int64_t at = rk.position(c->rk, where) == ERR_NO_ERROR ? p->offset : -1;
    rk.list_destroy(where);
    return at;
}

/* The next record (or event) from the consumer's queue, waiting up to 100 ms for one; NULL if
 * none came. What the queue holds is taken at once, without waiting for a full batch: a range's
 * last records must not wait for records after it. */
static rd_kafka_message_t *next_message(Consumer *c) {
    if (c->at < c->count) return c->held[c->at++];
    c->at = c->count = 0;
    long n = rk.consume_batch_queue(c->queue, 0, c->held, HELD);
    if (n <= 0) n = rk.consume_batch_queue(c->queue, 100, c->held, 1);
    if (n <= 0) return NULL;
    c->count = n;
    c->at = 1;
    return c->held[0];
}

/* Poll [start, end) into r, with the GIL released; READ_OK or why not, detail in message. */
static int poll_range(Consumer *c, int64_t start, int64_t end, double timeout_s, Columns *r, char *message, size_t size) {
    if (c->next != start) {  /* a first read, or not where the last one ended: (re)assign at start */
        drop_held(c);
        rd_kafka_topic_partition_list_t *assignment = rk.list_new(1);
        rk.list_add(assignment, c->topic, c->partition)->offset = start;
        int err = rk.assign(c->rk, assignment);
        rk.list_destroy(assignment);
        if (err != ERR_NO_ERROR) {
            snprintf(message, size, "%s", rk.err2str(err));
            return READ_KAFKA_ERROR;
        }
        c->next = start;
    }
    double deadline = now_s() + timeout_s;
    int64_t since_position = 0;
    while (1) {
        rd_kafka_message_t *m = next_message(c);
        int check_position = m == NULL;
        if (m != NULL) {
            if (m->err == ERR_NO_ERROR) {
                if (m->offset >= end) {  /* past the range (its end was a transaction marker or a gap): the next one's */
                    c->at--;  /* held for the next read */
                    return READ_OK;
                }
                if (m->offset >= start) columns_append(r, m);
                int64_t offset = m->offset;
                rk.message_destroy(m);
                if (failed) return READ_NO_MEMORY;
                if (offset >= end - 1) return READ_OK;
            } else if (m->err == ERR_PARTITION_EOF) {
                rk.message_destroy(m);
                check_position = 1;
            } else {
                int status = m->err == ERR_OFFSET_OUT_OF_RANGE || m->err == ERR_AUTO_OFFSET_RESET ? READ_OFFSET_OUT_OF_RANGE : READ_KAFKA_ERROR;
                snprintf(message, size, "%s%s%.*s", rk.err2str(m->err), m->payload ? ": " : "",
                         m->payload ? (int)(m->len < 512 ? m->len : 512) : 0, m->payload ? (const char *)m->payload : "");
                rk.message_destroy(m);
                return status;
            }
        }
        if (check_position || ++since_position >= 10000) {
            since_position = 0;
            /* The position counts every record taken from the queue, the held ones too: past the
             * end with some held, those below the end are still to be read (returning then lost
             * a range's last records, up to a batch's worth, each 10,000th record). */
            if (c->at >= c->count && position(c) >= end) return READ_OK;
        }
        if (now_s() > deadline) return READ_TIMED_OUT;
    }
}

/* read(consumer, start, end, timeout_s) ->
 *   (status, message, rows, offsets, timestamps, key, value, headers)
 * key, value: (validity, offsets, data, null count); headers: (validity, list offsets, null
 * count, name offsets, name data, value offsets, value data). After anything but READ_OK, the
 * consumer assigns afresh at its next read. */
static PyObject *read_records(PyObject *self, PyObject *args) {
    PyObject *capsule;
    long long start, end;
    double timeout_s;
    if (!PyArg_ParseTuple(args, "OLLd", &capsule, &start, &end, &timeout_s)) return NULL;
    Consumer *c = PyCapsule_GetPointer(capsule, CAPSULE);
    if (c == NULL) return NULL;
    if (c->rk == NULL || c->pid != getpid()) {
        PyErr_SetString(PyExc_ValueError, "the consumer was closed, or belongs to the process this one was forked from");
        return NULL;
    }
    Columns r;
    char message[1024] = "";
    int status = READ_OK;
    failed = 0;
    columns_init(&r);
    Py_BEGIN_ALLOW_THREADS
    if (end > start) status = poll_range(c, start, end, timeout_s, &r, message, sizeof message);
    if (failed && status == READ_OK) status = READ_NO_MEMORY;
    c->next = status == READ_OK ? (end > start ? end : c->next) : -1;
    Py_END_ALLOW_THREADS

    PyObject *result;
    if (status != READ_OK) {
        /* librdkafka's text may carry a broker's bytes: never fail on them */
        result = Py_BuildValue("(iNL)", status, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"), (long long)r.rows);
    } else {
        result = Py_BuildValue(
            "(isLNNNN(NNLNNNN))", status, message, (long long)r.rows, buffer_bytes(&r.offsets), buffer_bytes(&r.stamps), binary_tuple(&r.keys),
            binary_tuple(&r.values), buffer_bytes(&r.header_validity), buffer_bytes(&r.header_offsets), (long long)r.header_nulls,
            buffer_bytes(&r.names.offsets), buffer_bytes(&r.names.data), buffer_bytes(&r.header_values.offsets), buffer_bytes(&r.header_values.data));
    }
    columns_free(&r);
    return result;
}

/* -- Record batches as the broker sends them ----------------------------------------------------
 *
 * sinks/_internal/kafka_wire.py fetches a partition's records itself (the Fetch request, read
 * committed) and hands each response's record set here: magic-2 record batches, decoded into the
 * same columns as above with no allocation per record. librdkafka makes an operation and a message
 * per record on its broker thread and frees them on ours: of one partition's 500k records, ~290 ms
 * of CPU, most of it in malloc, free and the futex wake-ups of their arena locks; here ~40 ms.
 *
 * Read committed, as Kafka's own consumer does it: a response lists the aborted transactions
 * overlapping what it holds (producer id, first offset); a transactional batch of a producer whose
 * aborted transaction began at or before the batch's last offset is skipped, until that
 * producer's ABORT marker; control batches (the markers) are never records. */

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* Kafka's varint: zig-zag, 7 bits a byte, least significant first. 0 when it runs past end. */
static int varlong(const uint8_t **p, const uint8_t *end, int64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 1;
        }
    }
    return 0;
}

/* A length-prefixed field (-1: null) within [*p, end); 0 if it does not fit. */
static int bytes_field(const uint8_t **p, const uint8_t *end, const uint8_t **data, int64_t *len) {
    if (!varlong(p, end, len) || *len < -1 || (*len > 0 && *len > end - *p)) return 0;
    *data = *p;
    if (*len > 0) *p += *len;
    return 1;
}

enum { BATCH_HEADER = 61, ATTR_COMPRESSION = 0x07, ATTR_LOG_APPEND_TIME = 0x08, ATTR_TRANSACTIONAL = 0x10, ATTR_CONTROL = 0x20 };
enum { DECODE_OK = 0, DECODE_COMPRESSED = 1, DECODE_CORRUPT = 2, DECODE_NO_MEMORY = 3, DECODE_OLD_FORMAT = 4 };

/* One record of a batch into r if its offset is in [from, end); 0 if it is malformed. */
static int decode_record(Columns *r, const uint8_t **p, const uint8_t *batch_end, int64_t base, int64_t stamp_base, int log_append, int64_t max_stamp, int64_t from, int64_t end) {
    int64_t size, stamp_delta, offset_delta, key_len, value_len, count;
    const uint8_t *key, *value;
    if (!varlong(p, batch_end, &size) || size < 0 || size > batch_end - *p) return 0;
    const uint8_t *record_end = *p + size;
    const uint8_t *q = *p + 1;  /* past the record's attributes (unused) */
    if (q > record_end || !varlong(&q, record_end, &stamp_delta) || !varlong(&q, record_end, &offset_delta)) return 0;
    *p = record_end;
    int64_t offset = base + offset_delta;
    if (offset < from || offset >= end) return 1;  /* before the fetch's offset (its batch began earlier) or past the range */
    if (!bytes_field(&q, record_end, &key, &key_len) || !bytes_field(&q, record_end, &value, &value_len) || !varlong(&q, record_end, &count) || count < 0)
        return 0;
    int32_t headers_before = r->headers_total;
    for (int64_t i = 0; i < count; i++) {  /* a null header value reads as empty, as the other readers give it */
        const uint8_t *name, *hvalue;
        int64_t name_len, hvalue_len;
        if (!bytes_field(&q, record_end, &name, &name_len) || name_len < 0 || !bytes_field(&q, record_end, &hvalue, &hvalue_len)) return 0;
        binary_append(&r->names, r->headers_total, name, (size_t)name_len, 1);
        binary_append(&r->header_values, r->headers_total, hvalue, hvalue_len > 0 ? (size_t)hvalue_len : 0, 1);
        r->headers_total++;
    }
    append_int64(&r->offsets, offset);
    append_int64(&r->stamps, log_append ? max_stamp : stamp_base + stamp_delta);
    binary_append(&r->keys, r->rows, key, key_len > 0 ? (size_t)key_len : 0, key_len >= 0);
    binary_append(&r->values, r->rows, value, value_len > 0 ? (size_t)value_len : 0, value_len >= 0);
    append_bit(&r->header_validity, r->rows, r->headers_total > headers_before);  /* no headers: null */
    if (r->headers_total == headers_before) r->header_nulls++;
    append_int32(&r->header_offsets, r->headers_total);
    r->rows++;
    return 1;
}

/* Whether a control batch is an ABORT marker: its record's key is (version, type), type 0. */
static int abort_marker(const uint8_t *records, const uint8_t *batch_end) {
    const uint8_t *p = records, *key;
    int64_t size, skip, key_len;
    if (!varlong(&p, batch_end, &size) || p + 1 > batch_end) return 0;
    p++;
    if (!varlong(&p, batch_end, &skip) || !varlong(&p, batch_end, &skip) || !bytes_field(&p, batch_end, &key, &key_len) || key_len < 4) return 0;
    return be16(key + 2) == 0;
}

typedef struct {
    int64_t producer, first;
} Aborted;

/* Decode the record set [data, data + len) into r: records with offsets in [from, end). *next
 * becomes the offset after the last whole batch read (a batch cut off at the set's end is the
 * next fetch's). aborted: n transactions sorted by first offset, or NULL (read uncommitted). */
static int decode_set(Columns *r, const uint8_t *data, size_t len, int64_t from, int64_t end, const Aborted *aborted, size_t n, int64_t *next) {
    int64_t *open = n ? malloc(n * sizeof *open) : NULL;  /* producers inside an aborted transaction */
    size_t open_count = 0, taken = 0, pos = 0;
    int status = DECODE_OK;
    if (n && open == NULL) return DECODE_NO_MEMORY;
    *next = from;
    while (pos + BATCH_HEADER <= len && status == DECODE_OK) {
        const uint8_t *b = data + pos;
        int64_t base = (int64_t)be64(b);
        int64_t size = (int32_t)be32(b + 8);
        if (size < BATCH_HEADER - 12) { status = DECODE_CORRUPT; break; }
        if ((size_t)size + 12 > len - pos) break;  /* cut off: fetched again next time */
        if (b[16] != 2) { status = DECODE_OLD_FORMAT; break; }
        if (base >= end) break;
        const uint8_t *batch_end = b + 12 + size;
        int attributes = be16(b + 21);
        int64_t last = base + (int32_t)be32(b + 23);
        int64_t producer = (int64_t)be64(b + 43);
        int skip = attributes & ATTR_CONTROL;
        if (aborted != NULL && producer >= 0) {
            for (; taken < n && aborted[taken].first <= last; taken++) open[open_count++] = aborted[taken].producer;
            size_t i = 0;
            while (i < open_count && open[i] != producer) i++;
            if (attributes & ATTR_CONTROL) {
                if (i < open_count && abort_marker(b + BATCH_HEADER, batch_end)) open[i] = open[--open_count];
            } else if ((attributes & ATTR_TRANSACTIONAL) && i < open_count) {
                skip = 1;
            }
        }
        if (!skip) {
            if (attributes & ATTR_COMPRESSION) { status = DECODE_COMPRESSED; break; }
            const uint8_t *p = b + BATCH_HEADER;
            int64_t count = (int32_t)be32(b + 57);
            int64_t stamp_base = (int64_t)be64(b + 27), max_stamp = (int64_t)be64(b + 35);
            for (int64_t i = 0; i < count; i++)
                if (!decode_record(r, &p, batch_end, base, stamp_base, attributes & ATTR_LOG_APPEND_TIME, max_stamp, from, end)) { status = DECODE_CORRUPT; break; }
            if (failed && status == DECODE_OK) status = DECODE_NO_MEMORY;
            if (status != DECODE_OK) break;
        }
        if (last + 1 > *next) *next = last + 1;
        pos += (size_t)size + 12;
    }
    free(open);
    return status;
}

static const char *DECODED = "deltastreams.kafka_range.Columns";

static void decoded_destructor(PyObject *capsule) {
    Columns *r = PyCapsule_GetPointer(capsule, DECODED);
    if (r != NULL) {
        columns_free(r);
        free(r);
    }
}

/* new_columns() -> columns: where decode() appends a range's records, fetch after fetch. */
static PyObject *new_columns(PyObject *self, PyObject *args) {
    Columns *r = malloc(sizeof *r);
    if (r == NULL) return PyErr_NoMemory();
    failed = 0;
    columns_init(r);
    PyObject *capsule = PyCapsule_New(r, DECODED, decoded_destructor);
    if (capsule == NULL) {
        columns_free(r);
        free(r);
    }
    return capsule;
}

/* decode(columns, record_set, from, end, aborted) -> (status, next, rows decoded so far)
 * aborted: None (read uncommitted) or a list of (producer id, first offset) sorted by first offset. */
static PyObject *decode_records(PyObject *self, PyObject *args) {
    PyObject *capsule, *aborted_list;
    Py_buffer set;
    long long from, end;
    if (!PyArg_ParseTuple(args, "Oy*LLO", &capsule, &set, &from, &end, &aborted_list)) return NULL;
    Columns *r = PyCapsule_GetPointer(capsule, DECODED);
    Aborted *aborted = NULL;
    size_t n = 0;
    if (r != NULL && aborted_list != Py_None) {
        PyObject *items = PySequence_Fast(aborted_list, "aborted must be a sequence of (producer id, first offset)");
        if (items != NULL) {
            n = (size_t)PySequence_Fast_GET_SIZE(items);
            aborted = malloc((n ? n : 1) * sizeof *aborted);
            for (size_t i = 0; aborted != NULL && i < n; i++) {
                long long producer, first;
                if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, (Py_ssize_t)i), "LL", &producer, &first)) break;
                aborted[i].producer = producer, aborted[i].first = first;
            }
            if (aborted == NULL) PyErr_NoMemory();
            Py_DECREF(items);
        }
        if (aborted == NULL || PyErr_Occurred()) {
            free(aborted);
            PyBuffer_Release(&set);
            return NULL;
        }
    }
    if (r == NULL) {
        PyBuffer_Release(&set);
        return NULL;
    }
    int64_t next = from;
    int status;
    Py_BEGIN_ALLOW_THREADS
    failed = 0;
    status = decode_set(r, set.buf, (size_t)set.len, from, end, aborted_list == Py_None ? NULL : aborted, n, &next);
    Py_END_ALLOW_THREADS
    free(aborted);
    PyBuffer_Release(&set);
    return Py_BuildValue("(iLL)", status, (long long)next, (long long)r->rows);
}

/* columns(columns) -> (rows, offsets, timestamps, key, value, headers), laid out as read() gives
 * them, each buffer as (address, size) in the columns' own memory: Python wraps them without a
 * copy (a range's values are tens of MB), holding the columns object while they live. */
static PyObject *buffer_view(Buffer *b) { return Py_BuildValue("(nn)", (Py_ssize_t)(uintptr_t)b->data, (Py_ssize_t)b->len); }
static PyObject *binary_view(Binary *c) {
    return Py_BuildValue("(NNNL)", buffer_view(&c->validity), buffer_view(&c->offsets), buffer_view(&c->data), (long long)c->nulls);
}

static PyObject *take_columns(PyObject *self, PyObject *args) {
    PyObject *capsule;
    if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
    Columns *r = PyCapsule_GetPointer(capsule, DECODED);
    if (r == NULL) return NULL;
    return Py_BuildValue(
        "(LNNNN(NNLNNNN))", (long long)r->rows, buffer_view(&r->offsets), buffer_view(&r->stamps), binary_view(&r->keys), binary_view(&r->values),
        buffer_view(&r->header_validity), buffer_view(&r->header_offsets), (long long)r->header_nulls, buffer_view(&r->names.offsets),
        buffer_view(&r->names.data), buffer_view(&r->header_values.offsets), buffer_view(&r->header_values.data));
}

static PyMethodDef methods[] = {
    {"new_columns", new_columns, METH_NOARGS, "new_columns(): columns a range's fetched record sets are decoded into"},
    {"decode", decode_records, METH_VARARGS, "decode(columns, record_set, from, end, aborted): a Fetch response's records into columns"},
    {"columns", take_columns, METH_VARARGS, "columns(columns): where the decoded records' Arrow buffers are, as (address, size)"},
    {"open_library", open_library, METH_VARARGS, "open_library(path): load librdkafka's functions from the shared library at path"},
    {"open_consumer", open_consumer, METH_VARARGS, "open_consumer(settings, topic, partition): a consumer of one partition, kept between reads"},
    {"read", read_records, METH_VARARGS, "read(consumer, start, end, timeout_s): one offset range as Arrow buffers"},
    {"close_consumer", close_consumer, METH_VARARGS, "close_consumer(consumer): leave the partition and free the client"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kafka_range", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kafka_range(void) { return PyModule_Create(&module); }
