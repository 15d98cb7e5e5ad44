/*
 * media - a toolhost component written in C whose tool answers with media content items:
 *
 *   swatch_tone  {"color"?: "#rrggbb", "size"?: 1..64, "hz"?: 50..3000, "ms"?: 10..1000}
 *                -> content items: a text line, an image/png (a size x size square of the colour) and an
 *                   audio/wav (a sine tone of hz for ms, 16-bit mono PCM at 8000 Hz).
 *
 * Both files are generated here, from the arguments, with no library: the PNG's pixels go in one stored
 * (uncompressed) deflate block inside a zlib stream, with the CRC-32 and Adler-32 the formats ask for; the tone
 * comes from a sine recurrence (no libm). An MCP client receives them as `image` and `audio` content items (base64
 * data with their mimeType) on both protocol eras. Built by scripts/build-guests.mjs for world 0.2.0
 * (wit/v0.2/tool.wit); listed in toolhost.example.yaml.
 */
#include "toolhost.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Checksums                                                                */
/* ------------------------------------------------------------------------ */

static uint32_t crc_table[256];

static void crc_init(void) {
    if (crc_table[1] != 0) return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t adler32(const uint8_t *p, size_t n) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + p[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return b << 16 | a;
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static void put_le16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v) {
    put_le16(p, v & 0xffff); put_le16(p + 2, v >> 16);
}

/* ------------------------------------------------------------------------ */
/* PNG                                                                      */
/* ------------------------------------------------------------------------ */

#define MAX_SIZE 64
/* Filter byte + RGB per row: at most 64 * 193 bytes, well under one stored block's 65535. */
#define MAX_RAW (MAX_SIZE * (1 + 3 * MAX_SIZE))

static uint8_t raw[MAX_RAW];
static uint8_t png[8 + 25 + (12 + 2 + 5 + MAX_RAW + 4) + 12];

/* Append one chunk (length, type, data, CRC over type and data) at `at`; returns the new end. */
static size_t png_chunk(size_t at, const char type[4], const uint8_t *data, size_t len) {
    put_be32(png + at, (uint32_t)len);
    memcpy(png + at + 4, type, 4);
    if (len > 0 && data != png + at + 8) memmove(png + at + 8, data, len);
    put_be32(png + at + 8 + len, crc32(png + at + 4, 4 + len));
    return at + 12 + len;
}

/* A size x size square of one colour; returns the PNG's length (in `png`). */
static size_t make_png(uint32_t size, uint8_t r, uint8_t g, uint8_t b) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    crc_init();
    size_t raw_len = 0;
    for (uint32_t y = 0; y < size; y++) {
        raw[raw_len++] = 0; /* filter: none */
        for (uint32_t x = 0; x < size; x++) {
            raw[raw_len++] = r; raw[raw_len++] = g; raw[raw_len++] = b;
        }
    }
    memcpy(png, signature, 8);
    uint8_t ihdr[13];
    put_be32(ihdr, size);
    put_be32(ihdr + 4, size);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    size_t at = png_chunk(8, "IHDR", ihdr, sizeof ihdr);
    /* IDAT: a zlib stream (CMF 0x78, FLG 0x01) of one final stored block, then the Adler-32 of the raw bytes. */
    uint8_t *z = png + at + 8;
    z[0] = 0x78; z[1] = 0x01;
    z[2] = 0x01; /* BFINAL = 1, BTYPE = 00 (stored) */
    put_le16(z + 3, (uint32_t)raw_len);
    put_le16(z + 5, (uint32_t)(~raw_len & 0xffff));
    memcpy(z + 7, raw, raw_len);
    put_be32(z + 7 + raw_len, adler32(raw, raw_len));
    at = png_chunk(at, "IDAT", z, 7 + raw_len + 4);
    return png_chunk(at, "IEND", NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* WAV                                                                      */
/* ------------------------------------------------------------------------ */

#define RATE 8000
#define MAX_MS 1000
#define MAX_SAMPLES (RATE * MAX_MS / 1000)

static uint8_t wav[44 + 2 * MAX_SAMPLES];

/* sin and cos of x in [0, pi] by their series (no libm in the guest). */
static double series(double x, int odd) {
    double term = odd ? x : 1.0, sum = term;
    for (int n = odd ? 2 : 1; n < 40; n++) {
        term *= -x * x / ((2.0 * n - (odd ? 1 : 0)) * (2.0 * n - (odd ? 2 : 1)));
        sum += term;
    }
    return sum;
}

/* A sine tone of `hz` for `ms` milliseconds, 16-bit mono PCM; returns the WAV's length (in `wav`). */
static size_t make_wav(uint32_t hz, uint32_t ms) {
    const uint32_t samples = RATE * ms / 1000;
    const double w = 2.0 * 3.14159265358979323846 * (double)hz / RATE;
    const double c = series(w, 0), amplitude = 0.3 * 32767.0;
    /* y[n] = 2 cos(w) y[n-1] - y[n-2], from y[0] = 0 and y[1] = sin(w); faded in and out over 80 samples. */
    double y = 0.0, ahead = series(w, 1);
    uint8_t *pcm = wav + 44;
    for (uint32_t n = 0; n < samples; n++) {
        double sample = y, next = 2.0 * c * ahead - y;
        y = ahead;
        ahead = next;
        uint32_t edge = n < samples - 1 - n ? n : samples - 1 - n;
        double gain = edge < 80 ? (double)edge / 80.0 : 1.0;
        int32_t s = (int32_t)(sample * amplitude * gain);
        put_le16(pcm + 2 * n, (uint32_t)(uint16_t)(int16_t)s);
    }
    const uint32_t data = 2 * samples;
    memcpy(wav, "RIFF", 4);
    put_le32(wav + 4, 36 + data);
    memcpy(wav + 8, "WAVEfmt ", 8);
    put_le32(wav + 16, 16);        /* fmt chunk size */
    put_le16(wav + 20, 1);         /* PCM */
    put_le16(wav + 22, 1);         /* mono */
    put_le32(wav + 24, RATE);      /* sample rate */
    put_le32(wav + 28, RATE * 2);  /* byte rate */
    put_le16(wav + 32, 2);         /* block align */
    put_le16(wav + 34, 16);        /* bits per sample */
    memcpy(wav + 36, "data", 4);
    put_le32(wav + 40, data);
    return 44 + data;
}

/* ------------------------------------------------------------------------ */
/* swatch_tone                                                              */
/* ------------------------------------------------------------------------ */

static int hex_digit(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Read optional integer `key` in [min, max] into `*out` (left as is when absent); false when out of range. */
static bool int_arg(th_str args, const char *key, int64_t min, int64_t max, uint32_t *out) {
    int64_t v;
    th_json_status status = th_json_get_int(args, key, &v);
    if (status == TH_JSON_MISSING) return true;
    if (status != TH_JSON_OK || v < min || v > max) return false;
    *out = (uint32_t)v;
    return true;
}

static int swatch_tone(th_str args, th_buf *out, th_error *err) {
    static const char *const keys[] = {"color", "size", "hz", "ms", NULL};
    uint32_t size = 16, hz = 440, ms = 250;
    uint8_t rgb[3] = {0x33, 0x66, 0xcc};
    th_buf color = TH_BUF_INIT;
    bool ok = th_json_only_keys(args, keys) && int_arg(args, "size", 1, MAX_SIZE, &size) &&
              int_arg(args, "hz", 50, 3000, &hz) && int_arg(args, "ms", 10, MAX_MS, &ms);
    th_json_status has_color = th_json_get_string(args, "color", &color);
    if (ok && has_color == TH_JSON_OK) {
        ok = color.len == 7 && color.ptr[0] == '#';
        for (int i = 0; ok && i < 3; i++) {
            int hi = hex_digit(color.ptr[1 + 2 * i]), lo = hex_digit(color.ptr[2 + 2 * i]);
            ok = hi >= 0 && lo >= 0;
            if (ok) rgb[i] = (uint8_t)(hi << 4 | lo);
        }
    } else if (has_color != TH_JSON_MISSING) {
        ok = false;
    }
    th_buf_free(&color);
    if (!ok) {
        return th_fail(err, "INVALID_ARGS",
                       "expected {\"color\"?: \"#rrggbb\", \"size\"?: 1..64, \"hz\"?: 50..3000, \"ms\"?: 10..1000}",
                       NULL);
    }

    static const char hex[] = "0123456789abcdef";
    const char css[8] = {'#', hex[rgb[0] >> 4], hex[rgb[0] & 15], hex[rgb[1] >> 4], hex[rgb[1] & 15], hex[rgb[2] >> 4], hex[rgb[2] & 15], 0};
    /* "A 16x16 swatch of #3366cc and a 440 Hz tone of 250 ms." */
    th_buf text = TH_BUF_INIT;
    th_buf_puts(&text, "A ");
    th_buf_put_int(&text, size);
    th_buf_putc(&text, 'x');
    th_buf_put_int(&text, size);
    th_buf_puts(&text, " swatch of ");
    th_buf_puts(&text, css);
    th_buf_puts(&text, " and a ");
    th_buf_put_int(&text, hz);
    th_buf_puts(&text, " Hz tone of ");
    th_buf_put_int(&text, ms);
    th_buf_puts(&text, " ms.");
    th_content_text(text.ptr, text.len);
    th_buf_free(&text);
    th_content_image(png, make_png(size, rgb[0], rgb[1], rgb[2]), "image/png");
    th_content_audio(wav, make_wav(hz, ms), "audio/wav");
    (void)out;
    return TH_OK;
}

/* ------------------------------------------------------------------------ */
/* Tool table                                                               */
/* ------------------------------------------------------------------------ */

static const th_tool tools[] = {
    {
        .name = "swatch_tone",
        .title = "Swatch and tone",
        .annotations = {.read_only = TH_HINT_TRUE, .destructive = TH_HINT_FALSE, .idempotent = TH_HINT_TRUE, .open_world = TH_HINT_FALSE},
        .description = "Returns a square PNG of a colour and a WAV sine tone, as image and audio content items.",
        .input_schema = "{\"type\":\"object\",\"properties\":{"
                        "\"color\":{\"type\":\"string\",\"pattern\":\"^#[0-9a-fA-F]{6}$\",\"description\":\"The swatch's colour (default #3366cc)\"},"
                        "\"size\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":64,\"description\":\"Side of the square, in pixels (default 16)\"},"
                        "\"hz\":{\"type\":\"integer\",\"minimum\":50,\"maximum\":3000,\"description\":\"The tone's frequency (default 440)\"},"
                        "\"ms\":{\"type\":\"integer\",\"minimum\":10,\"maximum\":1000,\"description\":\"The tone's length (default 250)\"}},"
                        "\"additionalProperties\":false}",
        .idempotent = true,
        .call = swatch_tone,
    },
};

TH_EXPORT_TOOLS(tools)
