import ImgCacheCore

/// Renders `imgcache(1)` in man(7) macros from the command table.
public enum ManPage {
    public static func render() -> String {
        var out: [String] = [
            ".TH IMGCACHE 1 \"\" \"imgcache \(ImgCache.version)\" \"User Commands\"",
            ".SH NAME",
            "imgcache \\- fetch images once, keep them in a local cache",
            ".SH SYNOPSIS",
            ".B imgcache",
            "[\\fIglobal options\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]",
            ".SH DESCRIPTION",
            "imgcache downloads images over HTTP(S) into a namespaced disk cache and answers later requests "
                + "for the same URL from the cache. A download is stored only if it is a "
                + CodecRegistry.spelled(CodecRegistry.storedFormats) + " image whose header decodes; stores are atomic.",
            ".SH COMMANDS",
        ]
        for command in CommandTable.commands {
            out.append(".SS \"\(escape(command.usage))\"")
            out.append(escape(command.description))
            for operand in command.operands {
                out += [".TP", "\\fI\(operand.name)\\fR", escape(operand.help)]
            }
            out += command.options.flatMap(optionEntry)
        }
        out.append(".SH GLOBAL OPTIONS")
        out.append("Accepted before or after the command.")
        out += CommandTable.globalOptions.flatMap(optionEntry)
        out.append(".SH OPTION BITS")
        out.append(escape("fetch and prefetch take SDWebImage's option bits with --options: a comma list of names "
            + "(RetryFailed, retry-failed or SDWebImageRetryFailed; any case) or masks (17, 0x11). They add to the flags; "
            + "--priority overrides the priority bits."))
        for entry in OptionBits.entries {
            let flag = entry.flag.map { " (\\fB" + escape($0) + "\\fR)" } ?? ""
            out += [".TP", "\\fB\(entry.name)\\fR \(OptionBits.hex(entry.option))" + flag, escape(entry.meaning)]
        }
        out += [
            ".SH OUTPUT",
            escape("fetch prints one line per URL, in the order given: the cached file's path, or an empty line for a URL "
                + "that failed (its error goes to standard error), so that the output lines up with the input (paste). "
                + "--with-url prints URL<TAB>PATH instead; --json one JSON object per URL. -q silences warnings, notes, "
                + "progress and summaries, never results. A second SIGINT or SIGTERM stops at once, without the summary; "
                + "temporary files are removed either way."),
            ".SH FAILED URLS",
            escape("A URL that fails for a lasting reason is remembered per namespace, and fetch and prefetch fail it at once, "
                + "without a request, until the failed TTL has passed (default 24h; --failed-ttl, or clean --failed-ttl --remember "
                + "for the namespace) or --retry-failed is given. The list answers only misses: a cached entry is always served. "
                + "Remembered: a body that is not a storable image, HTTP 4xx except 407, 408 and 429, a scheme other than http or "
                + "https after a redirect, a body over --max-size (then only for runs whose limit is no larger). 401 and 403 "
                + "are remembered only for requests without -u, -H or --cookies, and answer only such requests; a proxy's 407 "
                + "never (the proxy wants credentials, the error names it). "
                + "Not remembered: a string that is no http or https URL (no request is made), "
                + "DNS failures, refused, reset or lost connections, timeouts, TLS failures, HTTP 5xx, 408 and 429, too many "
                + "redirects, an image over --max-pixels or failing --verify full or a transform (they depend on this run's "
                + "options), an interruption. The record is kept per URL as requested, without its fragment and whatever "
                + "--key-filter does. A --refresh that fails keeps the cached entry: for a passing reason (the server down, a "
                + "timeout, a 5xx) the entry answers, with a warning (cache type stale); for a lasting one (404, 410) the error is "
                + "reported and later fetches still serve the entry. A success removes the URL from the list; clean removes expired ones; clear --failed empties it."),
            ".SH REMOTE STORES",
            escape("With --remote (or IMGCACHE_REMOTE, or a list remembered with --remote ... --remember), a miss in the "
                + "local cache asks each remote store in turn before the origin: an HTTP server that takes PUT (nginx WebDAV), "
                + "Redis (redis://, redis+unix:) or an S3 bucket (s3://BUCKET/PREFIX?endpoint=URL&region=R, credentials from "
                + "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). An object found is checked (length, SHA-256, then as a download) "
                + "before it is stored locally; an image downloaded from the origin is written to every store without the "
                + "read-only attribute. A store that is down, slow, full, refuses the credentials or answers garbage is said once "
                + "on standard error, left alone for the run and skipped by other processes for 60 s; the origin answers, and "
                + "the exit status depends only on it. remote check probes each store. Attributes, recipes and the object "
                + "format: Docs/FLEET.md in the source tree."),
        ]
        out += [
            ".SH ENVIRONMENT",
            ".TP", ".B IMGCACHE_DIR", "Cache root, when \\fB\\-\\-cache\\-dir\\fR is not given.",
            ".TP", ".B XDG_CACHE_HOME", "When absolute, the cache root is \\fI$XDG_CACHE_HOME/imgcache\\fR.",
            ".TP", ".B HOME", "Otherwise the cache root is \\fI~/.cache/imgcache\\fR (without HOME, the home folder in the password database).",
            ".TP", ".B IMGCACHE_NAMESPACE", "Namespace, when \\fB\\-n\\fR is not given (default: \\fIdefault\\fR).",
            ".TP", ".B NO_COLOR", "When set and not empty, no colour (unless \\fB\\-\\-color always\\fR).",
            ".TP", ".B http_proxy, https_proxy, no_proxy", "Proxies, as libcurl reads them.",
            ".TP", ".B IMGCACHE_REMOTE",
            "Remote stores, separated by spaces, when \\fB\\-\\-remote\\fR is not given; outranks the namespace's remembered list.",
            ".TP", ".B AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN", "Credentials for s3:// remote stores.",
            ".TP", ".B IMGCACHE_METADATA",
            "\\fIfiles\\fR keeps each entry's metadata in a sidecar \\fI.meta\\fR file even where extended attributes work "
                + "(for caches copied by tools that drop them); \\fIauto\\fR (the default) uses the attribute where it can.",
            ".SH FILES",
            ".TP", ".I <root>/<namespace>/<xx>/<md5>.<ext>",
            "A cached image: the bytes the server sent. \\fIxx\\fR is the first two hex digits of the MD5 of the URL; "
                + "the extension names the format of the bytes (\(CodecRegistry.storedFormats.map(\.fileExtension).joined(separator: ", "))), "
                + "whatever the URL says.",
            "Its metadata (ETag, Last-Modified, Content-Type, size, pixel size, time stored) is the file's extended "
                + "attribute \\fIuser.imgcache\\fR, in a compact form that fits in the inode. The file's modification time is its last use.",
            ".TP", ".I <root>/<namespace>/<xx>/<md5>.meta",
            "The metadata, where the file system keeps no extended attributes.",
            ".TP", ".I <root>/<namespace>/<xx>/urls",
            "The URLs of the shard's entries, a line each (written with each store; clean drops those of removed entries).",
            ".TP", ".I <root>/<namespace>/<xx>/tmp.*",
            "Files being written, renamed into place when whole; clean removes those of processes that are gone.",
            ".TP", ".I <root>/<namespace>/lock",
            "Coordinates processes sharing the namespace (byte-range locks).",
            ".TP", ".I <root>/<namespace>/settings",
            "Limits saved by \\fBclean \\-\\-remember\\fR (max size, max age, failed TTL) and remote stores saved by "
                + "\\fB\\-\\-remote ... \\-\\-remember\\fR.",
            ".TP", ".I <root>/.remote-down/",
            "A file per remote store that failed lately; its modification time is when. Runs skip the store for 60 s after.",
            ".TP", ".I <root>/<namespace>/stats",
            "The statistics cache-info shows: a line added by each fetch or prefetch as it ends (under a shared lock), "
                + "summed when read; cache-info \\-\\-zero restarts them, clean merges the lines.",
            ".TP", ".I <root>/<namespace>/failed/",
            "One file per failed URL: its URL and the reason; its modification time is when it failed.",
            ".SH EXIT STATUS",
        ]
        for status in ExitStatus.documented {
            out += [".TP", ".B \(status.rawValue)", escape(status.meaning)]
        }
        out.append(".SH EXAMPLES")
        for command in CommandTable.commands {
            for (example, meaning) in command.examples {
                out += [".TP", ".B \(escape(example))", escape(meaning)]
            }
        }
        out += [".SH SEE ALSO", ".BR curl (1),", ".BR wget (1)"]
        return out.joined(separator: "\n") + "\n"
    }

    private static func optionEntry(_ option: OptionSpec) -> [String] {
        var label = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
        label += "\\fB" + escape("--" + option.long) + "\\fR"
        if let metavar = option.metavar { label += " \\fI\(metavar)\\fR" }
        if let optional = option.optionalValue { label += "[=\\fI\(optional)\\fR]" }
        return [".TP", label, escape(option.help)]
    }

    /// Escapes backslashes and dashes, and keeps a leading dot or quote from being read as a macro.
    static func escape(_ text: String) -> String {
        var escaped = text.replacing("\\", with: "\\e").replacing("-", with: "\\-")
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped
    }
}
