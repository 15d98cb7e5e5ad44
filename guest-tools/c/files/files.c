/*
 * Component `files`: read and list files in the worktree bound to the call.
 *
 * The host preopens the worktree at /worktree (read-only under the DEFAULT
 * privilege, read-write under ELEVATED); paths given to these tools are
 * relative to it. Without a worktree there is nothing to read: the host's
 * policy (worktree_required) refuses such calls before they reach the tool.
 *
 *   read_file  {"path": string, "max_bytes"?: integer}  -> {"path", "size", "content", "truncated"}
 *   list_dir   {"path"?: string}                         -> {"path", "entries": [{"name", "type", "size"}]}
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "toolhost.h"

#define WORKTREE "/worktree"
#define DEFAULT_MAX_BYTES (1024 * 1024)

/* Join the worktree root and a relative path; refuse absolute paths. */
static int guest_path(th_str args, const char *key, int required, th_buf *path, th_error *err) {
    th_buf rel = TH_BUF_INIT;
    th_json_status status = th_json_get_string(args, key, &rel);
    if (status == TH_JSON_MISSING && !required) {
        th_buf_puts(&rel, ".");
    } else if (status != TH_JSON_OK) {
        th_buf_free(&rel);
        return th_fail(err, "INVALID_ARGS", "\"path\" must be a string", NULL);
    }
    if (rel.len > 0 && rel.ptr[0] == '/') {
        th_buf_free(&rel);
        return th_fail(err, "INVALID_PATH", "paths are relative to the worktree; an absolute path is not allowed", NULL);
    }
    th_buf_puts(path, WORKTREE "/");
    th_buf_append(path, rel.ptr, rel.len);
    th_buf_free(&rel);
    return TH_OK;
}

static int errno_failure(th_error *err, const char *what, int error) {
    const char *code = error == ENOENT ? "NOT_FOUND" : (error == EACCES || error == EPERM || error == ENOTCAPABLE) ? "ACCESS_DENIED" : error == EISDIR ? "IS_DIRECTORY" : error == ENOTDIR ? "NOT_DIRECTORY" : "IO_ERROR";
    char message[256];
    snprintf(message, sizeof message, "%s: %s", what, strerror(error));
    return th_fail(err, code, message, NULL);
}

static int read_file(th_str args, th_buf *out, th_error *err) {
    th_buf path = TH_BUF_INIT;
    if (guest_path(args, "path", 1, &path, err) != TH_OK) return TH_ERR;
    int64_t max_bytes = DEFAULT_MAX_BYTES;
    th_json_get_int(args, "max_bytes", &max_bytes);
    if (max_bytes < 0) max_bytes = 0;

    FILE *file = fopen(path.ptr, "rb");
    if (!file) {
        int error = errno;
        th_buf_free(&path);
        return errno_failure(err, "cannot open the file", error);
    }
    th_buf content = TH_BUF_INIT;
    char chunk[16384];
    size_t total = 0;
    int truncated = 0;
    for (;;) {
        size_t n = fread(chunk, 1, sizeof chunk, file);
        if (n == 0) break;
        size_t keep = n;
        if (total + keep > (size_t)max_bytes) {
            keep = (size_t)max_bytes - total;
            truncated = 1;
        }
        th_buf_append(&content, chunk, keep);
        total += keep;
        if (truncated) break;
    }
    int failed = ferror(file);
    fclose(file);
    if (failed) {
        th_buf_free(&content);
        th_buf_free(&path);
        return errno_failure(err, "cannot read the file", EIO);
    }
    th_buf_puts(out, "{\"path\":");
    th_buf_json_string(out, path.ptr + sizeof WORKTREE, path.len - sizeof WORKTREE);
    th_buf_puts(out, ",\"size\":");
    th_buf_put_int(out, (int64_t)total);
    th_buf_puts(out, ",\"content\":");
    th_buf_json_string(out, content.ptr ? content.ptr : "", content.len);
    th_buf_puts(out, ",\"truncated\":");
    th_buf_puts(out, truncated ? "true}" : "false}");
    th_buf_free(&content);
    th_buf_free(&path);
    return TH_OK;
}

static const char *type_name(unsigned char type) {
    switch (type) {
    case DT_REG: return "file";
    case DT_DIR: return "directory";
    case DT_LNK: return "symlink";
    default: return "other";
    }
}

static int list_dir(th_str args, th_buf *out, th_error *err) {
    th_buf path = TH_BUF_INIT;
    if (guest_path(args, "path", 0, &path, err) != TH_OK) return TH_ERR;
    DIR *dir = opendir(path.ptr);
    if (!dir) {
        int error = errno;
        th_buf_free(&path);
        return errno_failure(err, "cannot open the directory", error);
    }
    th_buf_puts(out, "{\"path\":");
    th_buf_json_string(out, path.ptr + sizeof WORKTREE, path.len - sizeof WORKTREE);
    th_buf_puts(out, ",\"entries\":[");
    int first = 1;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (!first) th_buf_putc(out, ',');
        first = 0;
        th_buf_puts(out, "{\"name\":");
        th_buf_json_string(out, entry->d_name, strlen(entry->d_name));
        th_buf_puts(out, ",\"type\":\"");
        th_buf_puts(out, type_name(entry->d_type));
        th_buf_putc(out, '"');
        if (entry->d_type == DT_REG) {
            struct stat info;
            if (fstatat(dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) == 0) {
                th_buf_puts(out, ",\"size\":");
                th_buf_put_int(out, (int64_t)info.st_size);
            }
        }
        th_buf_putc(out, '}');
    }
    closedir(dir);
    th_buf_puts(out, "]}");
    th_buf_free(&path);
    return TH_OK;
}

static const th_tool tools[] = {
    {.name = "read_file",
     .description = "Read a text file from the worktree bound to the call (paths are relative to the worktree).",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Path relative to the worktree.\"},"
                     "\"max_bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Read at most this many bytes (default 1 MiB).\"}},"
                     "\"required\":[\"path\"],\"additionalProperties\":false}",
     .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"content\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
                      "\"required\":[\"path\",\"size\",\"content\",\"truncated\"]}",
     .idempotent = true,
     .call = read_file},
    {.name = "list_dir",
     .description = "List a directory of the worktree bound to the call (default: its root).",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"Directory relative to the worktree.\"}},\"additionalProperties\":false}",
     .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
                      "\"properties\":{\"name\":{\"type\":\"string\"},\"type\":{\"enum\":[\"file\",\"directory\",\"symlink\",\"other\"]},\"size\":{\"type\":\"integer\"}},\"required\":[\"name\",\"type\"]}}},"
                      "\"required\":[\"path\",\"entries\"]}",
     .idempotent = true,
     .call = list_dir},
};

TH_EXPORT_TOOLS(tools)
