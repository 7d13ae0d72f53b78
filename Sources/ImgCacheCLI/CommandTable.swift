import ImgCacheCore

/// Every command and option of imgcache, declared once. The parser, `--help`,
/// the man page and the shell completions are all derived from this table.
public enum CommandTable {
    /// Options accepted before or after any command.
    public static let globalOptions: [OptionSpec] = [
        .value(.cacheDir, metavar: "DIR", kind: .directory,
               help: "Cache root (default: $IMGCACHE_DIR, else $XDG_CACHE_HOME/imgcache, else ~/.cache/imgcache)"),
        .value(.namespace, "n", metavar: "NAME", kind: .namespace,
               help: "Namespace inside the cache (default: $IMGCACHE_NAMESPACE, else 'default')"),
        .flag(.json, help: "Write results as JSON, one object per line"),
        .flag(.quiet, "q", help: "Print no warnings, notes, progress or summaries; results and errors are still printed"),
        .flag(.verbose, "v", repeatable: true, help: "Print details of what happens on stderr"),
        .value(.color, metavar: "WHEN", kind: .choice(ColorChoice.allCases.map(\.rawValue)),
               help: "Colour in messages: auto (a terminal without NO_COLOR), always or never"),
        .flag(.help, "h", help: "Show help (for a command: imgcache COMMAND --help)"),
        .flag(.version, help: "Show the version, the C libraries found and their versions, and the features they allow (-v: their files)"),
    ]

    /// How downloads are made; shared by the commands that download.
    public static let downloadOptions: [OptionSpec] = [
        .value(.concurrency, "j", metavar: "N", kind: .text,
               help: "Downloads running at once, 1 to \(CommandLineParser.maximumConcurrency) (default \(DownloadConfiguration.defaultConcurrency))"),
        .value(.timeout, metavar: "SECONDS", kind: .text,
               help: "Give up connecting, or waiting for the next byte, after this long (default 15; also 2.5, 500ms, 1m)"),
        .value(.connectTimeout, metavar: "SECONDS", kind: .text,
               help: "Give up connecting after this long (default: --timeout), as curl's --connect-timeout"),
        .value(.maxTime, "m", metavar: "SECONDS", kind: .text,
               help: "Give up a transfer that takes longer than this in all, however busy (default: no limit), as curl's -m"),
        .value(.retries, metavar: "N", kind: .text,
               help: "Try a transient failure (timeout, connection trouble, 5xx, 408, 429) again up to N times, with backoff (default 0)"),
        .value(.order, metavar: "ORDER", kind: .choice(DownloadOrder.allCases.map(\.rawValue)),
               help: "Which queued download starts first: fifo (oldest, default) or lifo (newest)"),
        .value(.priority, metavar: "LEVEL", kind: .choice(DownloadPriority.allCases.reversed().map(\.name)),
               help: "Queue priority of these downloads: high, normal or low (fetch: normal; prefetch: low)"),
        .value(.header, "H", metavar: "'NAME: VALUE'", kind: .text, repeatable: true,
               help: "Send this request header (repeatable); replaces a default of the same name, 'NAME:' removes it"),
        .value(.user, "u", metavar: "USER:PASSWORD", kind: .text,
               help: "HTTP basic authentication; never printed, logged or stored (USER alone: the password is asked on the terminal)"),
        .flag(.netrc, help: "Take credentials for hosts without -u from ~/.netrc, as curl -n"),
        .value(.netrcFile, metavar: "FILE", kind: .path, help: "Take credentials from this netrc file instead"),
        .value(.proxy, "x", metavar: "URL", kind: .text,
               help: "Send every request through this proxy (http://, https://, socks5h://; default: $https_proxy and the like)"),
        .value(.cookies, metavar: "FILE", kind: .path,
               help: "Cookie jar (Netscape format): read before, written after; created if missing"),
        .flag(.insecure, "k", help: "Do not verify TLS certificates or host names (prints a warning)"),
        .value(.cacert, metavar: "FILE", kind: .path,
               help: "Trust the certificate authorities in this PEM file (default: $CURL_CA_BUNDLE, else $SSL_CERT_FILE, else the system's)"),
        .value(.capath, metavar: "DIR", kind: .directory,
               help: "Trust the certificate authorities in this hashed folder, as c_rehash makes (default: $SSL_CERT_DIR)"),
        .value(.maxRedirects, metavar: "N", kind: .text,
               help: "Follow at most N redirects, to http or https only (default 10)"),
        .value(.maxSize, metavar: "SIZE", kind: .text,
               help: "Abort a download whose body grows past SIZE (4096, 500k, 20M, 1.5GiB)"),
    ]

    /// How the manager answers each URL; shared by fetch and prefetch.
    /// The formats written animated, for help texts ("WebP or GIF").
    private static var animated: String { CodecRegistry.spelled(CodecRegistry.animatedFormats) }

    /// The writable formats with (or without) `capability`, for help texts.
    private static func writable(with capability: CodecCapabilities) -> [ImageFormat] {
        CodecRegistry.writableFormats.filter { CodecRegistry.codec(for: $0).capabilities.contains(capability) }
    }

    private static func writable(without capability: CodecCapabilities) -> [ImageFormat] {
        CodecRegistry.writableFormats.filter { !CodecRegistry.codec(for: $0).capabilities.contains(capability) }
    }

    public static let managerOptions: [OptionSpec] = [
        .flag(.refresh, optionalValue: "stale",
              help: "Revalidate cached copies with the server (ETag / Last-Modified); a 304 keeps the file (RefreshCached). =stale: only those whose freshness (max-age, Expires) ran out"),
        .flag(.cacheOnly, help: "Never download: a URL that is not cached is an error (FromCacheOnly)"),
        .flag(.noCacheRead, help: "Skip the cache lookup and download again; the image is still stored (FromLoaderOnly)"),
        .flag(.retryFailed, help: "Try URLs on the failed list again; a success takes them off it (RetryFailed)"),
        .value(.failedTtl, metavar: "AGE", kind: .text,
               help: "Fail fast on a URL that failed for a lasting reason less than AGE ago (default: the namespace's, else 24h; 'never')"),
        .value(.options, metavar: "LIST", kind: .suggestions(ImageOptions.named.map { ImageOptions.spelled($0.name) }),
               help: "SDWebImage options by name or mask: 'retry-failed,refresh-cached', '0x11', '17' (see OPTION BITS in imgcache(1))"),
        .value(.thumbnail, metavar: "WxH", kind: .text,
               help: "Store a thumbnail that fits inside WxH instead (aspect kept, never upscaled, area-averaged; an animation keeps its frames as \(animated), else its first)"),
        .flag(.scaleDown, optionalValue: "PIXELS",
              help: "Store images over PIXELS (default 15.7M) shrunk to fit it (ScaleDownLargeImages)"),
        .flag(.transformAnimated,
              help: "Accepted for SDWebImage's TransformAnimatedImage; no effect: animations always keep their frames as \(animated)"),
        .value(.format, metavar: "FORMAT", kind: .choice(ImageEncoder.writableFormats.map(\.rawValue)),
               help: "Format of a thumbnail or shrunk image: \(CodecRegistry.writableFormats.map(\.rawValue).joined(separator: ", ")) (default: the input's)"),
        .value(.background, metavar: "COLOR", kind: .suggestions(RGBColor.named.map(\.0)),
               help: "What transparent pixels become in a format without alpha (\(CodecRegistry.spelled(writable(without: .alpha)))): #RRGGBB, #RGB or a name (default white)"),
        .value(.quality, metavar: "N", kind: .text, help: "\(CodecRegistry.spelled(writable(with: .quality)).replacing(" or ", with: " and ")) quality of a thumbnail or shrunk image, 1 to 100 (default 85)"),
        .value(.verify, metavar: "LEVEL", kind: .choice(FetchSettings.Verification.allCases.map(\.rawValue)),
               help: "Check a download before storing it: header (signature and header decode; default) or full (every pixel of every frame)"),
        .value(.maxPixels, metavar: "PIXELS", kind: .text,
               help: "Refuse images with more pixels, from the header, before decoding (default 100M; also 2.5M, 8000x8000)"),
        .value(.keyFilter, metavar: "FILTER", kind: .suggestions(["strip-query", "keep-query=", "drop-query=", "none"]),
               help: "Cache key from the URL: strip-query, keep-query=NAME,..., drop-query=NAME,... or none (default)"),
        .value(.readOnlyPath, metavar: "DIR", kind: .directory, repeatable: true,
               help: "Also look in this namespace-shaped folder, after the namespace; never written (repeatable)"),
        .value(.remote, metavar: "URL", kind: .text, repeatable: true,
               help: "A remote store, the cache's second level, asked after a miss and written after a download "
                   + "(repeatable, asked in order; 'none' for none): http(s)://HOST/PREFIX, redis://HOST[:PORT][/DB], "
                   + "redis+unix:/SOCKET, s3://BUCKET/PREFIX?endpoint=URL&region=R; attributes after '|' "
                   + "(read-only, connect-timeout=1s, timeout=5s, ttl=30d, bearer-env=VAR, bearer-file=PATH, user-env=VAR, password-env=VAR). "
                   + "Default: $IMGCACHE_REMOTE, else the namespace's (--remember)"),
        .flag(.remoteReshare, help: "Write local hits to the remote stores too (else only new downloads)"),
        .flag(.remember, help: "Save the --remote list as the namespace's, for later runs"),
    ]

    public static let fetch = CommandSpec(
        name: "fetch",
        summary: "Get images: from the cache if there, else download and store them",
        description: """
            Looks each URL up in the cache; the misses are downloaded together, up to -j at \
            a time over kept-alive connections (redirects followed, a 15 s idle timeout), and \
            the same URL given twice is downloaded once. Each body must be a \(CodecRegistry.spelled(CodecRegistry.storedFormats)) \
            image whose header decodes; it is then stored atomically, named for its format \
            (\(CodecRegistry.spelled(CodecRegistry.storedFormats, extensions: true))). Prints one line per URL, in the order of the \
            URLs: the cached file's path, or an empty line for a URL that failed (its error \
            goes to standard error, and the others go on). URLs may also come from a list, \
            one per line (--input FILE, or '-' for standard input), answered in order as \
            they finish, in the same memory however long the list.
            """,
        options: [
            .value(.output, "o", metavar: "FILE", kind: .path,
                   help: "Also write the image to FILE ('-' for standard output); one URL only. A device, FIFO or link is written through, a plain file replaced atomically. A name ending in \(CodecRegistry.spelled(CodecRegistry.storedFormats, extensions: true)) must match the image's format"),
            .value(.input, "i", metavar: "FILE", kind: .path,
                   help: "Read URLs from FILE, one per line ('-': standard input); blank lines and '#' comments skipped"),
            .flag(.withUrl, help: "Print URL<TAB>PATH lines (an empty PATH for a URL that failed)"),
            .value(.outputDir, metavar: "DIR", kind: .directory,
                   help: "Also copy each image into DIR under the URL's file name with the extension of its format (DIR made if missing), as curl -O --output-dir"),
            .flag(.memoryOnly, help: "Do not store the image: write it to --output only (CacheMemoryOnly)"),
            .flag(.progressive, help: "Show the download's progress on a terminal, or in -v lines (ProgressiveDownload)"),
        ] + managerOptions + downloadOptions,
        operands: [OperandSpec(name: "URL", kind: .url, help: "http or https URL of an image ('-': read URLs from standard input)",
                               minimum: 0, maximum: nil)],
        examples: [
            ("imgcache fetch https://example.com/logo.png", "print the cached file's path"),
            ("imgcache fetch -i urls.txt --with-url", "URL<TAB>PATH for each line of a list, in order"),
            ("imgcache fetch -o logo.png https://example.com/logo.png", "save a copy as logo.png"),
            ("imgcache --json fetch URL1 URL2", "one JSON object per URL"),
            ("imgcache fetch -j 12 --retries 2 $(cat urls.txt)", "many at once, retrying transient failures"),
            ("imgcache fetch -H 'Referer: https://example.com/' -u me:secret URL", "with a header and credentials"),
            ("imgcache fetch --key-filter keep-query=w,h 'https://cdn.example/a.jpg?w=64&h=64&sig=x'", "one entry whatever the signature"),
        ]
    )

    public static let prefetch = CommandSpec(
        name: "prefetch", summary: "Warm the cache from a list of URLs",
        description: """
            Reads URLs from FILE, or standard input when FILE is '-' or absent: one per line; \
            blank lines and lines starting with '#' are skipped. Work starts while the list is \
            still being read, and memory stays flat however long it is. Each distinct URL is \
            looked up and, if missing, downloaded (low priority unless --priority says \
            otherwise), checked and stored, as fetch does; repeats are skipped. On a terminal, \
            a progress bar on standard error. At the end a summary: URLs, downloaded, already \
            cached, failed, skipped as failed before (blacklisted). With --json, one JSON line \
            per distinct URL as it finishes, then a summary line. Exit 0 only when every URL \
            is in the cache at the end. SIGINT or SIGTERM stops it: transfers are aborted, \
            their temporary files removed, and the summary so far is printed.
            """,
        options: [
            .flag(.noProgress, help: "No progress bar, even on a terminal"),
        ] + managerOptions + downloadOptions,
        operands: [OperandSpec(name: "FILE", kind: .path, help: "list of URLs, one per line ('-': standard input)",
                               minimum: 0, maximum: 1)],
        examples: [
            ("imgcache prefetch urls.txt", "warm the cache, with a progress bar"),
            ("grep -o 'https://[^\"]*\\.jpg' page.html | imgcache prefetch -j 12", "from a pipe"),
            ("imgcache --json prefetch urls.txt | jq -r 'select(.error) | .url'", "the URLs that failed"),
            ("imgcache -q prefetch --retry-failed urls.txt || echo some failed", "in a script"),
        ]
    )

    /// `--all-namespaces`, shared by the maintenance commands.
    static let allNamespaces = OptionSpec.flag(.allNamespaces, help: "Every namespace under the cache root, one after another")

    public static let cacheInfo = CommandSpec(
        name: "cache-info", summary: "Show what a namespace holds and its limits",
        description: """
            Prints the namespace's folder, its entries with their size (the bytes of the \
            images, and the space they take on disk), the oldest and newest last use, the \
            failed URLs remembered, temporary files of stores in progress (or abandoned), \
            the limits clean applies (remembered with clean --remember, or the \
            defaults), the remote stores, and the statistics of fetch and prefetch since \
            they were last zeroed: hits, misses (from remote stores, downloaded, failed) \
            and the bytes downloaded, each process adding its counts once as it ends. \
            Reads directory listings, file sizes and the statistics file.
            """,
        options: [allNamespaces,
                  .flag(.zero, help: "Zero the statistics (hits, misses, downloads, failures) first, as ccache -z does")],
        examples: [
            ("imgcache cache-info", "the default namespace"),
            ("imgcache --json cache-info --all-namespaces", "one JSON object per namespace"),
            ("imgcache cache-info --zero", "start counting hits and misses afresh"),
        ]
    )

    public static let clean = CommandSpec(
        name: "clean", summary: "Expire unused entries and trim the namespace to size",
        description: """
            Removes entries not used for --max-age; then, if the entries still take more \
            than --max-size on disk, removes the least recently used until they take less \
            than half of it. Also removes temporary files left by interrupted stores, \
            expired failed URLs (kept \(FailedURLStore.defaultTTL)), and symbolic links planted in the \
            cache (never what they point to). Safe while other imgcache processes use the \
            namespace: an entry used since the scan is kept. A second clean of the same \
            namespace notices the first, says so and exits 0. Limits not given come from \
            the namespace (clean --remember), else the defaults: --max-age \(CacheLimits.defaultMaxAge), \
            --max-size \(CacheLimits.defaultMaxSize).
            """,
        options: [
            .value(.maxSize, metavar: "SIZE", kind: .text,
                   help: "Most disk space the entries may take (500M, 2G, 1.5GiB, bytes; 'none' for no limit); with --all-namespaces, each namespace's own"),
            .value(.maxAge, metavar: "AGE", kind: .text,
                   help: "Remove entries not used for this long (45s, 30m, 12h, 7d, 2w; 'never')"),
            .value(.failedTtl, metavar: "AGE", kind: .text,
                   help: "Remove failed URLs remembered for longer than AGE (default 24h; 'never'); fetch honours a remembered one"),
            .flag(.remember, help: "Save the --max-size, --max-age and --failed-ttl given as the namespace's, for later runs"),
            .flag(.dryRun, help: "List each file that would be removed, why and its URL (also with -q); remove nothing"),
            allNamespaces,
        ],
        examples: [
            ("imgcache clean --max-size 2G --max-age 30d --remember", "set the limits once, and clean"),
            ("imgcache clean -q", "a cron line: the remembered limits"),
            ("imgcache clean --dry-run --max-age 1d", "what a day's limit would remove"),
        ]
    )

    public static let clear = CommandSpec(
        name: "clear", summary: "Remove every entry of a namespace (or its failed URLs)",
        description: """
            Removes every entry of the namespace, shard by shard, so that concurrent readers \
            see an entry whole or not at all. Stores running at the same time finish \
            normally. Remembered limits and failed URLs are kept; --failed empties the \
            failed-URL list instead, and leaves the entries. Symbolic links in the cache \
            are removed, never followed.
            """,
        options: [
            .flag(.failed, help: "Forget the failed URLs only (or only the URLs given, each if remembered); keep the entries"),
            allNamespaces,
        ],
        operands: [OperandSpec(name: "URL", kind: .url, help: "with --failed: forget only this URL's failure",
                               minimum: 0, maximum: nil)],
        examples: [
            ("imgcache clear -n thumbnails", "empty the 'thumbnails' namespace"),
            ("imgcache clear --failed", "try every failed URL again next time"),
            ("imgcache clear --failed https://example.com/logo.png", "try that one again next time"),
        ]
    )

    public static let list = CommandSpec(
        name: "list", summary: "List the cached images (or the failed URLs) of a namespace",
        description: """
            Prints a line per entry: its last use, size, format, pixel size and URL (a \
            thumbnail's transform after the URL, in brackets), a shard at a time, so that \
            the first lines come at once and memory stays flat however large the namespace. \
            PATTERN keeps the URLs it matches: a glob (*, ?, [...]) matched against the whole \
            URL, or, without those characters, any URL that contains it. --sort orders \
            the lines, after reading them all. --failed lists the failed URLs instead: when \
            each failed, why, and whether it has expired. Reads only: safe beside every \
            other command.
            """,
        options: [
            .value(.sort, metavar: "ORDER", kind: .choice(["recent", "size", "url"]),
                   help: "recent (most recently used first), size (largest first) or url (alphabetical); default: cache order"),
            .flag(.failed, help: "List the failed URLs instead, with their causes and ages"),
        ],
        operands: [OperandSpec(name: "PATTERN", kind: .text, help: "keep URLs matching this glob, or containing this text",
                               minimum: 0, maximum: 1)],
        examples: [
            ("imgcache list", "every entry"),
            ("imgcache list 'https://cdn.example/*.png' --sort size", "the PNGs from one host, largest first"),
            ("imgcache --json list | jq -r 'select(.bytes > 1000000) | .url'", "the URLs of the entries over 1 MB"),
            ("imgcache list --failed", "what failed, and why"),
        ]
    )

    public static let remove = CommandSpec(
        name: "remove", summary: "Remove the entries of some URLs",
        description: """
            Removes each URL's entries: the image as served and its thumbnails and shrunk \
            copies. A URL is found by its key, as fetch finds it (its normal form; give \
            the --key-filter it was fetched with), even when its URL log line is lost or \
            its metadata damaged. --match removes the entries whose URL matches a pattern \
            instead, as list matches them (a glob with *, ? or [, else a part of the URL). \
            Each entry is removed under its shard's lock, so fetches, cleans and clears \
            may run meanwhile. Prints what was removed. Exit 1 when a URL given has no \
            entry, or a pattern matches none (the others are still removed).
            """,
        options: [
            .value(.match, metavar: "PATTERN", kind: .text, repeatable: true,
                   help: "Remove the entries whose URL matches PATTERN, as list matches it: a glob, else a part of the URL (repeatable)"),
            .value(.keyFilter, metavar: "FILTER", kind: .suggestions(["strip-query", "keep-query=", "drop-query=", "none"]),
                   help: "The --key-filter the URLs were fetched with, so that their entries are found"),
            .flag(.dryRun, help: "Print what would be removed; remove nothing"),
        ],
        operands: [OperandSpec(name: "URL", kind: .url, help: "a URL whose entries to remove", minimum: 0, maximum: nil)],
        examples: [
            ("imgcache remove https://example.com/logo.png", "that image, and its thumbnails"),
            ("imgcache remove --match 'https://old-cdn.example/*'", "everything from one host"),
        ]
    )

    public static let config = CommandSpec(
        name: "config", summary: "Show or set a namespace's remembered limits",
        description: """
            Without options, shows the limits clean applies and the failed TTL fetch uses, \
            each with where it comes from (remembered, or the default), and the remote \
            stores. --max-size, --max-age and --failed-ttl remember new values, as clean \
            --remember does, without cleaning; --umask remembers the permission mask of \
            the namespace's files and folders; --unset KEY forgets one; --reset forgets every remembered value \
            (limits, mask and remote stores).
            """,
        options: [
            .value(.maxSize, metavar: "SIZE", kind: .text,
                   help: "Remember this size limit for clean (500M, 2G, 1.5GiB, bytes; 'none')"),
            .value(.maxAge, metavar: "AGE", kind: .text, help: "Remember this age limit for clean (30m, 12h, 7d, 2w, 1mo; 'never')"),
            .value(.failedTtl, metavar: "AGE", kind: .text, help: "Remember how long failed URLs are kept (default 24h; 'never')"),
            .value(.umask, metavar: "MASK", kind: .text,
                   help: "Remember the permission mask for what imgcache creates in the namespace, as 002 for a team ('none': the user's umask; IMGCACHE_UMASK overrides)"),
            .value(.unset, metavar: "KEY", kind: .choice(NamespaceSettings.keys), repeatable: true,
                   help: "Forget one remembered setting: max-size, max-age, failed-ttl, remote or umask (repeatable)"),
            .flag(.reset, help: "Forget every remembered limit and remote store of the namespace"),
        ],
        examples: [
            ("imgcache config", "the limits in force, and where each comes from"),
            ("imgcache -n thumbs config --max-size 500M --max-age 30d", "set them once, for later cleans"),
        ]
    )

    public static let remote = CommandSpec(
        name: "remote", summary: "Check the remote stores: write, read back and remove a probe",
        description: """
            'remote check' checks each remote store fetch and prefetch would use (--remote, \
            else $IMGCACHE_REMOTE, else the namespace's remembered ones): it reads an object \
            that is not there (a miss must not look like a failure), then writes a small \
            probe object, reads it back, compares it and removes it; a read-only store is \
            only read. Prints one line per store, OK with each request's time, or FAILED \
            with what went wrong (connection, credentials, a full store, a damaged answer). \
            A store that passes is no longer skipped as down. Exit 0 when every store \
            passes, 1 when one fails, 64 when there is none to check.
            """,
        options: [
            .value(.remote, metavar: "URL", kind: .text, repeatable: true,
                   help: "Check this store instead (repeatable; the same URL|attributes as fetch --remote)"),
            .flag(.insecure, "k", help: "Do not verify TLS certificates or host names (prints a warning)"),
        .value(.cacert, metavar: "FILE", kind: .path,
               help: "Trust the certificate authorities in this PEM file (default: $CURL_CA_BUNDLE, else $SSL_CERT_FILE, else the system's)"),
        .value(.capath, metavar: "DIR", kind: .directory,
               help: "Trust the certificate authorities in this hashed folder, as c_rehash makes (default: $SSL_CERT_DIR)"),
        ],
        operands: [OperandSpec(name: "ACTION", kind: .choice(["check"]), help: "check: write, read and remove a probe object",
                               minimum: 1, maximum: 1)],
        examples: [
            ("imgcache remote check", "the remotes fetch would use"),
            ("imgcache remote check --remote 'redis://cache.lan|timeout=2s'", "one store, before remembering it"),
        ]
    )

    public static let completions = CommandSpec(
        name: "completions", summary: "Print a shell completion script",
        description: "Prints the completion script for bash, zsh or fish. `make install` installs all three.",
        operands: [OperandSpec(name: "SHELL", kind: .choice(CompletionScript.shells), help: "bash, zsh or fish",
                               minimum: 1, maximum: 1)],
        examples: [("source <(imgcache completions bash)", "completion in the current bash session")]
    )

    public static let help = CommandSpec(
        name: "help", summary: "Show help for imgcache or one of its commands",
        description: "Shows the overview, or with a command name that command's help.",
        options: [.flag(.man, help: "Print the manual page instead (man(7) source; read it with man -l -)")],
        operands: [OperandSpec(name: "COMMAND", kind: .command, help: "the command to explain", minimum: 0, maximum: 1)],
        examples: [("imgcache help fetch", "the fetch command's options"),
                   ("imgcache help --man | man -l -", "the manual page")]
    )

    /// Every command, as the type that reads its arguments and runs it, in
    /// the order help lists them: adding a command is its file and a line here.
    static let subcommands: [any Subcommand.Type] = [
        FetchArguments.self, PrefetchArguments.self, ListArguments.self, CacheInfoArguments.self, CleanArguments.self,
        ClearArguments.self, RemoveArguments.self, ConfigArguments.self, RemoteArguments.self, CompletionsRequest.self,
        HelpRequest.self,
    ]

    /// All commands' table entries, in the order help lists them.
    public static let commands: [CommandSpec] = subcommands.map { $0.spec }

    /// The command called `name`.
    static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.spec.name == name }
    }

    /// The command called `name`, if there is one.
    public static func command(named name: String) -> CommandSpec? {
        commands.first { $0.name == name }
    }
}

/// When messages use colour.
public enum ColorChoice: String, CaseIterable, Equatable, Sendable {
    case auto, always, never
}
