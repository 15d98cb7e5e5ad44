/*
 * ctools - a toolhost component written in C, carrying two tools:
 *
 *   echo    returns its args JSON unchanged; the trivial tool used to
 *           measure the host's per-call overhead.
 *   sha256  {"text": string} -> {"sha256": "<64 hex chars>"}, the SHA-256
 *           (FIPS 180-4) of the UTF-8 bytes of `text`.
 *
 * Built by scripts/build-guests.mjs (host/authoring/c.ts, as `toolhost build` does) against the SDK in ../sdk,
 * for world 0.2.0 (wit/v0.2/tool.wit): the tools carry a title, the author's annotations and an icon; their
 * results are the same JSON values as in 0.1.0.
 */
#include "toolhost.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* echo                                                                     */
/* ------------------------------------------------------------------------ */

static int echo(th_str args, th_buf *out, th_error *err) {
    (void)err;
    th_buf_append(out, args.ptr, args.len);
    return TH_OK;
}

/* ------------------------------------------------------------------------ */
/* SHA-256                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;    /* bytes hashed so far */
    uint8_t block[64]; /* pending partial block */
    size_t used;       /* bytes in `block` */
} sha256_ctx;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_compress(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) +
                      K[i] + w[i];
        uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void sha256_init(sha256_ctx *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->used = 0;
}

static void sha256_update(sha256_ctx *s, const uint8_t *p, size_t n) {
    s->total += n;
    if (s->used) { /* top up the pending block first */
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used < 64) return;
        sha256_compress(s->h, s->block);
        s->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64) sha256_compress(s->h, p);
    memcpy(s->block, p, n);
    s->used = n;
}

static void sha256_final(sha256_ctx *s, uint8_t digest[32]) {
    uint64_t bits = s->total * 8;
    uint8_t pad[72] = {0x80}; /* 0x80, zeros, then the 64-bit big-endian length */
    size_t padlen = (s->used < 56 ? (size_t)56 : (size_t)120) - s->used;
    for (int i = 0; i < 8; i++) pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(s->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)s->h[i];
    }
}

/* ------------------------------------------------------------------------ */
/* sha256 tool                                                              */
/* ------------------------------------------------------------------------ */

#define CHUNK (64 * 1024) /* progress granularity for large inputs */

static int sha256_tool(th_str args, th_buf *out, th_error *err) {
    static const char *const keys[] = {"text", NULL};
    th_buf text = TH_BUF_INIT;
    if (!th_json_only_keys(args, keys) ||
        th_json_get_string(args, "text", &text) != TH_JSON_OK) {
        th_buf_free(&text);
        return th_fail(err, "INVALID_ARGS", "expected {\"text\": string} and nothing else",
                       NULL);
    }

    sha256_ctx s;
    sha256_init(&s);
    const uint8_t *p = (const uint8_t *)text.ptr;
    size_t len = text.len;
    if (len <= CHUNK) {
        sha256_update(&s, p, len);
    } else {
        /* Large input: report progress, and honour cancellation, per chunk. */
        for (size_t done = 0; done < len;) {
            if (th_cancelled()) {
                th_buf_free(&text);
                return th_fail(err, "CANCELLED", "cancelled by the caller", NULL);
            }
            size_t n = len - done < CHUNK ? len - done : CHUNK;
            sha256_update(&s, p + done, n);
            done += n;
            th_progress((float)(100.0 * (double)done / (double)len), NULL);
        }
    }
    th_buf_free(&text);

    uint8_t digest[32];
    sha256_final(&s, digest);
    static const char hex[] = "0123456789abcdef";
    char line[64];
    for (int i = 0; i < 32; i++) {
        line[2 * i] = hex[digest[i] >> 4];
        line[2 * i + 1] = hex[digest[i] & 15];
    }
    th_buf_reserve(out, 14 + 64);
    th_buf_puts(out, "{\"sha256\":\"");
    th_buf_append(out, line, sizeof line);
    th_buf_puts(out, "\"}");
    return TH_OK;
}

/* ------------------------------------------------------------------------ */
/* Tool table                                                               */
/* ------------------------------------------------------------------------ */

/* Pure functions of their arguments: no state, no files, no network. */
#define PURE {.read_only = TH_HINT_TRUE, .destructive = TH_HINT_FALSE, .idempotent = TH_HINT_TRUE, .open_world = TH_HINT_FALSE}
static const char *const any_size[] = {"any", NULL};
/* A small "C" in a box (SVG). */
static const th_icon icon[] = {{
    .src = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHRleHQgeT0iMTIiPkM8L3RleHQ+PC9zdmc+",
    .mime_type = "image/svg+xml",
    .sizes = any_size,
}};

static const th_tool tools[] = {
    {
        .name = "echo",
        .title = "Echo",
        .annotations = PURE,
        .icons = icon,
        .icon_count = 1,
        .description = "Returns its arguments unchanged.",
        .input_schema = "{\"type\":\"object\"}",
        .idempotent = true,
        .call = echo,
    },
    {
        .name = "sha256",
        .title = "SHA-256",
        .annotations = PURE,
        .icons = icon,
        .icon_count = 1,
        .description = "Computes the SHA-256 digest of a text's UTF-8 bytes, as lowercase hex.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                        "\"required\":[\"text\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sha256\":{\"type\":\"string\","
                         "\"pattern\":\"^[0-9a-f]{64}$\"}},\"required\":[\"sha256\"],"
                         "\"additionalProperties\":false}",
        .idempotent = true,
        .call = sha256_tool,
    },
};

TH_EXPORT_TOOLS(tools)
