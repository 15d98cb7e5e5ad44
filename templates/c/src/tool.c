/*
 * The {{name}} tool component. Build it with `npm run build` (toolhost build):
 * clang --target=wasm32-wasi compiles this file together with toolhost's C SDK
 * (toolhost.h / toolhost.c, found in the installed toolhost package; nothing
 * to copy) into dist/{{name}}.wasm, for the 0.2.0 tool world (package.json:
 * "toolhost": { "world": "0.2.0" }): a title and annotations below; a tool may
 * also add content items (th_content_*) and ask the client (th_sample, th_elicit).
 */
#include <stdlib.h>

#include "toolhost.h"

#define TOTAL_KEY "greetings.total"

static bool blank(const th_buf *s) {
    for (size_t i = 0; i < s->len; i++)
        if (s->ptr[i] != ' ' && s->ptr[i] != '\t' && s->ptr[i] != '\n' && s->ptr[i] != '\r') return false;
    return true;
}

static int greet(th_str args, th_buf *out, th_error *err) {
    th_buf name = TH_BUF_INIT;
    if (th_json_get_string(args, "name", &name) != TH_JSON_OK)
        return th_fail(err, "INVALID_ARGS", "\"name\" must be a string", NULL);
    if (blank(&name)) {
        th_buf_free(&name);
        return th_fail(err, "EMPTY_NAME", "name must not be blank", NULL);
    }
    int64_t times = 1; /* optional: the input schema bounds it to 1..100 */
    th_json_get_int(args, "times", &times);

    th_call_context ctx;
    th_context(&ctx);
    th_buf line = TH_BUF_INIT;
    th_buf_puts(&line, "call ");
    th_buf_append(&line, ctx.call_id.ptr, ctx.call_id.len);
    th_buf_puts(&line, " greets ");
    th_buf_append(&line, name.ptr, name.len);
    th_log(TH_LOG_DEBUG, line.ptr);
    th_buf_free(&line);
    th_context_free(&ctx);

    th_buf greeting = TH_BUF_INIT; /* "Hello, <name>!" as a JSON string */
    {
        th_buf text = TH_BUF_INIT;
        th_buf_puts(&text, "Hello, ");
        th_buf_append(&text, name.ptr, name.len);
        th_buf_putc(&text, '!');
        th_buf_json_string(&greeting, text.ptr, text.len);
        th_buf_free(&text);
    }
    th_buf_free(&name);

    th_buf_puts(out, "{\"greetings\":[");
    for (int64_t i = 1; i <= times; i++) {
        if (th_cancelled()) {
            th_buf_free(&greeting);
            return th_fail(err, "STOPPED", "stopped before all greetings were made", NULL);
        }
        if (i > 1) th_buf_putc(out, ',');
        th_buf_append(out, greeting.ptr, greeting.len);

        th_buf delta = TH_BUF_INIT;
        th_buf_puts(&delta, "{\"greeting\":");
        th_buf_append(&delta, greeting.ptr, greeting.len);
        th_buf_puts(&delta, ",\"n\":");
        th_buf_put_int(&delta, i);
        th_buf_putc(&delta, '}');
        th_delta(delta.ptr, delta.len);
        th_buf_free(&delta);

        th_buf message = TH_BUF_INIT; /* "<i> of <times>" */
        th_buf_put_int(&message, i);
        th_buf_puts(&message, " of ");
        th_buf_put_int(&message, times);
        th_progress((float)i * 100.0f / (float)times, message.ptr);
        th_buf_free(&message);
    }
    th_buf_free(&greeting);

    /* Conversation state: JSON text, scoped to the caller's conversation id. */
    int64_t total = times;
    th_buf saved = TH_BUF_INIT;
    if (th_get_state(TOTAL_KEY, &saved)) total += strtoll(saved.ptr, NULL, 10);
    th_buf_clear(&saved);
    th_buf_put_int(&saved, total);
    th_buf reason = TH_BUF_INIT;
    if (!th_set_state(TOTAL_KEY, saved.ptr, &reason)) th_log(TH_LOG_WARN, reason.ptr ? reason.ptr : "state not saved");
    th_buf_free(&reason);
    th_buf_free(&saved);

    th_buf_puts(out, "],\"total\":");
    th_buf_put_int(out, total);
    th_buf_putc(out, '}');
    return TH_OK;
}

static const th_tool tools[] = {
    {
        .name = "{{tool}}",
        .description = "Greets someone `times` times, streaming each greeting; counts the greetings of the conversation.",
        .input_schema =
            "{\"type\":\"object\",\"properties\":{"
            "\"name\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Who to greet.\"},"
            "\"times\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"How many greetings (default 1).\"}},"
            "\"required\":[\"name\"],\"additionalProperties\":false}",
        .output_schema =
            "{\"type\":\"object\",\"properties\":{\"greetings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
            "\"total\":{\"type\":\"integer\"}},\"required\":[\"greetings\",\"total\"]}",
        .streaming = true,
        .idempotent = false,
        .call = greet,
        .title = "Greeter",
        /* What the author says; the host lists what the tool's grant allows (never safer than the grant).
           Conversation state is the conversation's: the tool changes nothing outside it. */
        .annotations = {.read_only = TH_HINT_TRUE, .destructive = TH_HINT_FALSE, .idempotent = TH_HINT_FALSE, .open_world = TH_HINT_FALSE},
    },
};
TH_EXPORT_TOOLS(tools)
