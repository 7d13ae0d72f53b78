// libarchive writes the tar shards of `export --webdataset`: a tar is a format
// with enough corners (long names, pax headers) not to be written by hand.
// Loaded on first use, like every other library.
#include "imgcache_shims.h"
#include "loader.h"

#include <archive.h>
#include <archive_entry.h>
#include <string.h>

#define IC_ARCHIVE_FUNCTIONS(X)                                                        \
    X(struct archive *, archive_write_new, (void))                                     \
    X(int, archive_write_set_format_ustar, (struct archive *))                         \
    X(int, archive_write_open_filename, (struct archive *, const char *))              \
    X(int, archive_write_header, (struct archive *, struct archive_entry *))           \
    X(la_ssize_t, archive_write_data, (struct archive *, const void *, size_t))        \
    X(int, archive_write_close, (struct archive *))                                    \
    X(int, archive_write_free, (struct archive *))                                     \
    X(const char *, archive_error_string, (struct archive *))                          \
    X(struct archive_entry *, archive_entry_new, (void))                               \
    X(void, archive_entry_free, (struct archive_entry *))                              \
    X(void, archive_entry_set_pathname, (struct archive_entry *, const char *))        \
    X(void, archive_entry_set_size, (struct archive_entry *, la_int64_t))              \
    X(void, archive_entry_set_filetype, (struct archive_entry *, unsigned int))        \
    X(void, archive_entry_set_perm, (struct archive_entry *, mode_t))                  \
    X(void, archive_entry_set_mtime, (struct archive_entry *, time_t, long))           \
    X(void, archive_entry_set_uid, (struct archive_entry *, la_int64_t))               \
    X(void, archive_entry_set_gid, (struct archive_entry *, la_int64_t))

IC_LIBRARY(archive, "libarchive13", IC_ARCHIVE_FUNCTIONS, "libarchive.so.13", "libarchive.so")

static void archive_failure(struct archive *archive, char *error, size_t error_size) {
    const char *text = p_archive_error_string(archive);
    ic_set_error(error, error_size, text ? text : "libarchive failed");
}

void *ic_tar_open(const char *path, char *error, size_t error_size) {
    if (ic_archive_load(error, error_size) != 0) return NULL;
    struct archive *archive = p_archive_write_new();
    if (archive == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return NULL;
    }
    // ustar: every tar reader takes it; names here are short.
    if (p_archive_write_set_format_ustar(archive) != ARCHIVE_OK || p_archive_write_open_filename(archive, path) != ARCHIVE_OK) {
        archive_failure(archive, error, error_size);
        p_archive_write_free(archive);
        return NULL;
    }
    return archive;
}

int ic_tar_add(void *handle, const char *name, const void *bytes, size_t size, char *error, size_t error_size) {
    struct archive *archive = handle;
    struct archive_entry *entry = p_archive_entry_new();
    if (entry == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    // The same samples give the same bytes: no time, owner or mode of the machine's.
    p_archive_entry_set_pathname(entry, name);
    p_archive_entry_set_size(entry, (la_int64_t)size);
    p_archive_entry_set_filetype(entry, AE_IFREG);
    p_archive_entry_set_perm(entry, 0644);
    p_archive_entry_set_mtime(entry, 0, 0);
    p_archive_entry_set_uid(entry, 0);
    p_archive_entry_set_gid(entry, 0);
    int status = p_archive_write_header(archive, entry);
    p_archive_entry_free(entry);
    if (status != ARCHIVE_OK) {
        archive_failure(archive, error, error_size);
        return -1;
    }
    const char *cursor = bytes;
    while (size > 0) {
        la_ssize_t written = p_archive_write_data(archive, cursor, size);
        if (written <= 0) {
            archive_failure(archive, error, error_size);
            return -1;
        }
        cursor += written;
        size -= (size_t)written;
    }
    return 0;
}

int ic_tar_close(void *handle, char *error, size_t error_size) {
    struct archive *archive = handle;
    int status = p_archive_write_close(archive) == ARCHIVE_OK ? 0 : -1;
    if (status != 0) archive_failure(archive, error, error_size);
    p_archive_write_free(archive);
    return status;
}
