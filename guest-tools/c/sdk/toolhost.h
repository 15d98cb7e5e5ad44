/*
 * toolhost.h - a small C SDK for writing toolhost tools as WebAssembly
 * components, of world `toolhost:tool/tool-provider@0.1.0` (wit/tool.wit) or,
 * when TOOLHOST_WORLD_0_2 is defined, `toolhost:tool/tool-provider@0.2.0`
 * (wit/v0.2/tool.wit): the same API plus title, annotations and icons in
 * th_tool, content items (th_content_*), th_sample and th_elicit.
 * `toolhost build` defines TOOLHOST_WORLD_0_2 for a project whose
 * package.json says `"toolhost": { "world": "0.2.0" }` (the C template does).
 *
 * wit-bindgen is not used: toolhost.c implements the Component Model
 * canonical ABI for this one world by hand. A tool author only sees the API
 * below.
 *
 * Writing a component
 * -------------------
 *     #include "toolhost.h"
 *
 *     static int hello(th_str args, th_buf *out, th_error *err) {
 *         th_buf name = TH_BUF_INIT;
 *         if (th_json_get_string(args, "name", &name) != TH_JSON_OK)
 *             return th_fail(err, "INVALID_ARGS", "expected {\"name\": string}", NULL);
 *         th_buf_puts(out, "{\"greeting\":");
 *         th_buf_json_string(out, name.ptr, name.len);   // escapes for JSON
 *         th_buf_putc(out, '}');
 *         th_buf_free(&name);
 *         return TH_OK;
 *     }
 *
 *     static const th_tool tools[] = {
 *         { .name = "hello", .description = "Greets someone.",
 *           .input_schema = "{\"type\":\"object\"}", .idempotent = true,
 *           .call = hello },
 *     };
 *     TH_EXPORT_TOOLS(tools)
 *
 * and build it with `toolhost build` (clang --target=wasm32-wasi, reactor
 * exec model, this SDK's toolhost.c compiled in, then jco componentEmbed +
 * componentNew); `toolhost init DIR --lang c` starts a project.
 *
 * Conventions
 * -----------
 *  - Text is UTF-8. `th_str` is a borrowed (pointer, length) view and is not
 *    NUL-terminated. `th_buf` is an owned, growable, heap buffer; it keeps a
 *    NUL byte after `len` when `ptr` is non-NULL, so `ptr` can be used as a C
 *    string when the text holds no NUL itself.
 *  - Out of memory traps (the canonical ABI has no way to report it).
 *  - Everything is single-threaded; a handler runs inside one `call` export.
 *  - Before a handler runs, the SDK checks that `args` is one syntactically
 *    valid JSON object (a tool-error with code "INVALID_ARGS" otherwise), so
 *    handlers and the th_json_* helpers can rely on that.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Strings and buffers                                                      */
/* ------------------------------------------------------------------------ */

/** A borrowed UTF-8 string view (not NUL-terminated). */
typedef struct th_str {
    const char *ptr;
    size_t len;
} th_str;

/** An owned, growable byte buffer. Zero-initialise it with TH_BUF_INIT. */
typedef struct th_buf {
    char *ptr;  /* NULL while empty and never allocated */
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated (0: nothing to free) */
} th_buf;

#define TH_BUF_INIT {NULL, 0, 0}

/** A view of a NUL-terminated C string (NULL gives an empty view). */
th_str th_cstr(const char *s);
/** A view of a buffer's current contents. */
th_str th_buf_view(const th_buf *b);

/** Make room for `extra` more bytes (plus the trailing NUL). */
void th_buf_reserve(th_buf *b, size_t extra);
void th_buf_append(th_buf *b, const void *data, size_t len);
void th_buf_puts(th_buf *b, const char *s);
void th_buf_putc(th_buf *b, char c);
/** Append a signed integer in decimal. */
void th_buf_put_int(th_buf *b, int64_t v);
/** Append `s` as a quoted JSON string, escaping as JSON requires. */
void th_buf_json_string(th_buf *b, const char *s, size_t len);
/** Append a quoted JSON string, or `null` when `s` is NULL. */
void th_buf_json_cstr_or_null(th_buf *b, const char *s);
/** Forget the contents but keep the allocation. */
void th_buf_clear(th_buf *b);
/** Free the allocation and reset to TH_BUF_INIT. */
void th_buf_free(th_buf *b);

/* ------------------------------------------------------------------------ */
/* Tools                                                                    */
/* ------------------------------------------------------------------------ */

/** A tool-error record (WIT `tool-error`). Fill it with th_fail(). */
typedef struct th_error {
    th_buf code;
    th_buf message;
    th_buf details;   /* JSON text, meaningful when has_details */
    bool has_details;
} th_error;

enum { TH_OK = 0, TH_ERR = 1 };

/**
 * A tool handler. `args` is the call's JSON object (already checked to be
 * valid JSON). On success append the result JSON to `out` and return TH_OK.
 * On failure fill `err` (th_fail) and return TH_ERR; the contents of `out`
 * are then ignored. Returning TH_ERR with an empty `err->code` yields code
 * "TOOL_ERROR".
 */
typedef int (*th_handler)(th_str args, th_buf *out, th_error *err);

/** An author's hint (MCP tool annotation); zero is "not said". */
typedef enum th_hint {
    TH_HINT_UNSET = 0,
    TH_HINT_FALSE = 1,
    TH_HINT_TRUE = 2,
} th_hint;

/**
 * What a tool says about itself (WIT `tool-annotations`). The host lists them
 * as given except where the tool's grant says otherwise (it never lists a tool
 * as safer than its grant).
 */
typedef struct th_annotations {
    th_hint read_only;
    th_hint destructive;
    th_hint idempotent;
    th_hint open_world;
} th_annotations;

/** An icon a client may show (WIT `icon`). */
typedef struct th_icon {
    const char *src;               /* an https: or data: URI */
    const char *mime_type;         /* or NULL */
    const char *const *sizes;      /* NULL-terminated ("48x48", "any"), or NULL */
} th_icon;

/** One tool, as `describe` reports it (WIT `tool-info`) plus its handler. */
typedef struct th_tool {
    const char *name;          /* [a-zA-Z0-9_-]+, unique in the component */
    const char *description;
    const char *input_schema;  /* JSON Schema text */
    const char *output_schema; /* JSON Schema text, or NULL for none */
    bool streaming;            /* emits th_delta() events */
    bool idempotent;           /* safe to retry */
    th_handler call;
    /* World 0.2.0 only (ignored by a 0.1.0 build): */
    const char *title;         /* a human-readable name, or NULL */
    th_annotations annotations;
    const th_icon *icons;      /* `icon_count` icons, or NULL */
    size_t icon_count;
} th_tool;

/**
 * Register the component's tools. Use exactly once, at file scope, with an
 * array (not a pointer) of th_tool.
 */
#define TH_EXPORT_TOOLS(array)                                           \
    const th_tool *const th__tools = (array);                            \
    const size_t th__tool_count = sizeof(array) / sizeof((array)[0]);

extern const th_tool *const th__tools;
extern const size_t th__tool_count;

/**
 * Fill `err` (copying the strings) and return TH_ERR, so a handler can
 * `return th_fail(err, "CODE", "message", NULL);`. `details_json`, when not
 * NULL, must be JSON text.
 */
int th_fail(th_error *err, const char *code, const char *message,
            const char *details_json);

/* ------------------------------------------------------------------------ */
/* Host services (WIT interface `host`); valid only while a call runs.      */
/* ------------------------------------------------------------------------ */

typedef enum th_log_level {
    TH_LOG_TRACE = 0,
    TH_LOG_DEBUG = 1,
    TH_LOG_INFO = 2,
    TH_LOG_WARN = 3,
    TH_LOG_ERROR = 4,
} th_log_level;

/** The caller's identity (WIT `call-context`); free with th_context_free. */
typedef struct th_call_context {
    th_buf call_id;
    th_buf conversation_id;
    th_buf session_id;
    th_buf agent_name;
    bool has_conversation_id;
    bool has_session_id;
    bool has_agent_name;
} th_call_context;

/** Fetch the current call's context. */
void th_context(th_call_context *out);
void th_context_free(th_call_context *ctx);

/**
 * Report progress. `pct` in 0..100, or negative for "unknown"; `message`
 * may be NULL for none.
 */
void th_progress(float pct, const char *message);
/** Stream a piece of partial output; `json` must be JSON text. */
void th_delta(const char *json, size_t len);
/** Write a log line attributed to this call. */
void th_log(th_log_level level, const char *message);
/**
 * Read a state value. Returns true and replaces `*out`'s contents with the
 * value when the key is set, false (leaving `*out` empty) otherwise.
 */
bool th_get_state(const char *key, th_buf *out);
/**
 * Write a state value (JSON text). Returns true on success; on failure
 * returns false and, when `error_out` is not NULL, stores the host's reason.
 */
bool th_set_state(const char *key, const char *value, th_buf *error_out);
/** Whether the caller asked this call to stop. */
bool th_cancelled(void);

#ifdef TOOLHOST_WORLD_0_2
/* ------------------------------------------------------------------------ */
/* World 0.2.0: content items, sampling and elicitation (valid while a call  */
/* runs)                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Content items (MCP content blocks) of the current call's result, in the
 * order added; the SDK copies what it is given. A handler that returns TH_OK
 * with content items and nothing in `out` returns no value (no structured
 * content); one with neither returns the value `null`, as in 0.1.0. Items
 * added by a handler that returns TH_ERR are dropped.
 */
void th_content_text(const char *text, size_t len);
void th_content_image(const void *data, size_t len, const char *mime_type);
void th_content_audio(const void *data, size_t len, const char *mime_type);
/** A link to a resource; `title`, `description` and `mime_type` may be NULL. */
void th_content_resource_link(const char *uri, const char *name, const char *title,
                              const char *description, const char *mime_type);
/** An embedded resource with text contents; `mime_type` may be NULL. */
void th_content_resource_text(const char *uri, const char *mime_type,
                              const char *text, size_t len);
/** An embedded resource with binary contents; `mime_type` may be NULL. */
void th_content_resource_blob(const char *uri, const char *mime_type,
                              const void *data, size_t len);

typedef enum th_role { TH_ROLE_USER = 0, TH_ROLE_ASSISTANT = 1 } th_role;
typedef enum th_sampling_kind {
    TH_SAMPLING_TEXT = 0,
    TH_SAMPLING_IMAGE = 1,
    TH_SAMPLING_AUDIO = 2,
} th_sampling_kind;

/** One message of a sampling request: text, or image/audio bytes. */
typedef struct th_sampling_message {
    th_role role;
    th_sampling_kind kind;
    const char *text;      /* TH_SAMPLING_TEXT: NUL-terminated UTF-8 */
    const void *data;      /* image/audio bytes */
    size_t data_len;
    const char *mime_type; /* image/audio */
} th_sampling_message;

/** MCP `sampling/createMessage` parameters (WIT `sampling-request`). */
typedef struct th_sampling_request {
    const th_sampling_message *messages;
    size_t message_count;
    const char *system_prompt;          /* or NULL */
    uint32_t max_tokens;
    bool has_temperature;
    float temperature;
    const char *const *stop_sequences;  /* NULL-terminated, or NULL */
    /* Model preferences, sent when has_model_preferences: */
    bool has_model_preferences;
    const char *const *model_hints;     /* NULL-terminated, most preferred first, or NULL */
    float cost_priority;                /* 0..1, negative: not said */
    float speed_priority;
    float intelligence_priority;
} th_sampling_request;

/** The client's answer; free with th_sampling_result_free. */
typedef struct th_sampling_result {
    th_role role;
    th_sampling_kind kind;
    th_buf text;      /* TH_SAMPLING_TEXT */
    th_buf data;      /* image/audio bytes */
    th_buf mime_type; /* image/audio */
    th_buf model;
    th_buf stop_reason;
    bool has_stop_reason;
} th_sampling_result;

/**
 * Ask the calling client's model (MCP sampling). Blocks until the client
 * answers. Returns true and fills `*out`, or returns false and fills `*err`
 * with the host's reason (code PERMISSION_DENIED, CLIENT_UNSUPPORTED,
 * OUTPUT_LIMIT_EXCEEDED or TOOL_ERROR), so a handler may
 * `if (!th_sample(&req, &res, err)) return TH_ERR;`.
 */
bool th_sample(const th_sampling_request *request, th_sampling_result *out, th_error *err);
void th_sampling_result_free(th_sampling_result *r);

typedef enum th_elicit_action {
    TH_ELICIT_ACCEPT = 0,
    TH_ELICIT_DECLINE = 1,
    TH_ELICIT_CANCEL = 2,
} th_elicit_action;

/** The user's answer; free with th_elicit_result_free. */
typedef struct th_elicit_result {
    th_elicit_action action;
    th_buf content;   /* a JSON object's text, when has_content (action accept) */
    bool has_content;
} th_elicit_result;

/**
 * Ask the calling client's user (MCP elicitation, form mode):
 * `requested_schema` is a JSON Schema object of flat primitive properties.
 * Returns and fails as th_sample does.
 */
bool th_elicit(const char *message, const char *requested_schema,
               th_elicit_result *out, th_error *err);
void th_elicit_result_free(th_elicit_result *r);
#endif /* TOOLHOST_WORLD_0_2 */

/* ------------------------------------------------------------------------ */
/* Minimal JSON helpers                                                     */
/* ------------------------------------------------------------------------ */

typedef enum th_json_status {
    TH_JSON_OK = 0,
    TH_JSON_MISSING = 1,    /* the object has no such key */
    TH_JSON_WRONG_TYPE = 2, /* the key is there but its value has another type */
    TH_JSON_INVALID = 3,    /* the text is not a JSON object */
} th_json_status;

/** The type of a JSON value. */
typedef enum th_json_type {
    TH_JSON_NONE = 0, /* missing / invalid */
    TH_JSON_NULL,
    TH_JSON_BOOL,
    TH_JSON_NUMBER,
    TH_JSON_STRING,
    TH_JSON_ARRAY,
    TH_JSON_OBJECT,
} th_json_type;

/** Whether `json` is exactly one valid JSON value (with optional whitespace). */
bool th_json_valid(th_str json);
/** Whether `json` is one valid JSON value and that value is an object. */
bool th_json_is_object(th_str json);

/**
 * Find top-level member `key` of the JSON object `json` (the last one, like
 * JSON.parse, when a key repeats). On success `*value` (may be NULL) views
 * the member's raw JSON text. Returns TH_JSON_NONE when missing or invalid.
 */
th_json_type th_json_get(th_str json, const char *key, th_str *value);

/**
 * Decode top-level string member `key` into `*out` (replacing its contents)
 * as unescaped UTF-8. On TH_JSON_OK `out->ptr` is non-NULL and NUL-terminated.
 */
th_json_status th_json_get_string(th_str json, const char *key, th_buf *out);
/**
 * Read top-level integer member `key` (no fraction or exponent; must fit in
 * int64).
 */
th_json_status th_json_get_int(th_str json, const char *key, int64_t *out);
/** Read top-level boolean member `key`. */
th_json_status th_json_get_bool(th_str json, const char *key, bool *out);

/**
 * Check that every top-level key of the object is one of the NULL-terminated
 * `allowed` list (JSON Schema `additionalProperties: false`). Returns false
 * for another key or invalid JSON.
 */
bool th_json_only_keys(th_str json, const char *const *allowed);

/** Decode a JSON string literal (with its quotes) into `*out` (appending). */
bool th_json_decode_string(th_str literal, th_buf *out);

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
