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
        .value(.color, metavar: "WHEN", kind: .choice(ValueKind.Words(ColorChoice.allCases.map(\.rawValue))),
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
        .value(.perHost, metavar: "N", kind: .text,
               help: "Downloads running at once from one host (default: only -j's limit)"),
        .value(.rate, metavar: "N/s", kind: .text,
               help: "Requests to one host at most N a second, evenly spaced (also N/m, N/h; default: no limit)"),
        .value(.maxTime, "m", metavar: "SECONDS", kind: .text,
               help: "Give up a transfer that takes longer than this in all, however busy, a wait for another process downloading the URL included (default: no limit), as curl's -m; each retry is a transfer of its own (--deadline bounds the whole run)"),
        .value(.retries, metavar: "N", kind: .text,
               help: "Try a transient failure (timeout, connection trouble, 5xx, 408, 429) again up to N times, with backoff (default 0)"),
        .value(.order, metavar: "ORDER", kind: .choice(ValueKind.Words(DownloadOrder.allCases.map(\.rawValue))),
               help: "Which queued download starts first: fifo (oldest, default) or lifo (newest)"),
        .value(.priority, metavar: "LEVEL", kind: .choice(ValueKind.Words(DownloadPriority.allCases.reversed().map(\.name))),
               help: "Queue priority of these downloads: high, normal or low (fetch: normal; prefetch: low)"),
        .value(.accept, metavar: "TYPES", kind: .text,
               help: "Send this Accept header instead of the formats imgcache reads, best first (image/avif,image/jxl,image/webp,…; empty: none); the answers are cached apart from other Accepts"),
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
               help: "Abort a download whose body grows past SIZE (4096, 500k, 20M, 1.5GiB; default 1GiB, none: no limit)"),
        .value(.deadline, metavar: "SECONDS", kind: .text,
               help: "End the whole run after this long (also 90s, 10m, 2h): what is not done then fails, so nothing hangs at the end"),
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
        .value(.options, metavar: "LIST", kind: .suggestions(ValueKind.Words(ImageOptions.named.map { ImageOptions.spelled($0.name) })),
               help: "SDWebImage options by name or mask: 'retry-failed,refresh-cached', '0x11', '17' (see OPTION BITS in imgcache(1))"),
        .value(.thumbnail, metavar: "WxH,...", kind: .text,
               help: "Make a thumbnail that fits inside WxH (or W wide: Wx; H high: xH) from the cached original (aspect kept, never upscaled, area-averaged; an animation keeps its frames as \(animated), else its first); several sizes comma-separated"),
        .value(.fit, metavar: "MODE", kind: .choice(ValueKind.Words(ImageTransform.Fit.allCases.map(\.rawValue))),
               help: "How a thumbnail meets WxH: inside (default), cover (fill and crop the centre to exactly WxH), contain (fit and pad to exactly WxH with --background, else transparent), fill (stretch) or outside (the short side meets the box, nothing cropped)"),
        .flag(.upscale, help: "Enlarge an image smaller than the thumbnail's box to it"),
        .flag(.noOriginal, help: "Keep only the variants: the image as served is not stored once they are made"),
        .flag(.placeholders, help: "Also make each image's placeholders in the decode that makes its variants: its dominant colour, its ThumbHash and a WebP preview at most 32 pixels a side (--json: dominant_color, thumbhash, lqip)"),
        .flag(.keepSvg, help: "Pass inert SVG images through as served: no raster variants of them (--thumbnail and --format apply to the others; an SVG with script, event handlers or references to other documents gets variants)"),
        .flag(.scaleDown, optionalValue: "PIXELS",
              help: "Store images over PIXELS (default 15.7M) shrunk to fit it (ScaleDownLargeImages)"),
        .flag(.transformAnimated,
              help: "Accepted for SDWebImage's TransformAnimatedImage; no effect: animations always keep their frames as \(animated)"),
        .value(.format, metavar: "FORMAT,...", kind: .suggestions(ValueKind.Words(ImageEncoder.writableFormats.map(\.rawValue))),
               help: "Format of a variant: \(CodecRegistry.writableFormats.map(\.rawValue).joined(separator: ", ")) (default: the input's, PNG where imgcache does not write it); several comma-separated, each size in each"),
        .value(.background, metavar: "COLOR", kind: .suggestions(ValueKind.Words(RGBColor.named.map(\.0))),
               help: "What transparent pixels become in a format without alpha (\(CodecRegistry.spelled(writable(without: .alpha)))): #RRGGBB, #RGB or a name (default white)"),
        .value(.quality, metavar: "N", kind: .text, help: "\(CodecRegistry.spelled(writable(with: .quality)).replacing(" or ", with: " and ")) quality of a thumbnail or shrunk image, 1 to 100: N for every format, or FORMAT=N for some (avif=60,webp=80); default 85, AVIF 70"),
        .value(.verify, metavar: "LEVEL", kind: .choice(ValueKind.Words(FetchSettings.Verification.allCases.map(\.rawValue))),
               help: "Check a download before storing it: header (signature and header decode; default) or full (every pixel of every frame)"),
        .value(.maxPixels, metavar: "PIXELS", kind: .text,
               help: "Refuse images with more pixels, from the header, before decoding (default 100M; also 2.5M, 8000x8000)"),
        .value(.maxDecodeTime, metavar: "SECONDS", kind: .text,
               help: "Time one image's decode, transforms and encodes may take in their worker; past it the image fails and the run goes on (default: the namespace's, else 30s)"),
        .value(.maxDecodeMemory, metavar: "SIZE", kind: .text,
               help: "Memory every image's decode, transforms and encodes may take in their worker (default: the namespace's, else what each image's size says it needs, at most a quarter of this machine's and 2G)"),
        .value(.keyFilter, metavar: "FILTER", kind: .suggestions(["strip-query", "keep-query=", "drop-query=", "none"]),
               help: "Cache key from the URL: strip-query, keep-query=NAME,..., drop-query=NAME,... or none (default)"),
        .value(.readOnlyPath, metavar: "DIR", kind: .directory, repeatable: true,
               help: "Also look in this namespace-shaped folder, after the namespace; never written (repeatable)"),
        .value(.remote, metavar: "URL", kind: .text, repeatable: true,
               help: "A remote store, the cache's second level, asked after a miss and written after a download "
                   + "(repeatable, asked in order; 'none' for none): http(s)://HOST/PREFIX, redis://HOST[:PORT][/DB], "
                   + "redis+unix:/SOCKET, s3://BUCKET/PREFIX?endpoint=URL&region=R; attributes after '|' "
                   + "(read-only, keep-if-slow, connect-timeout=1s, timeout=5s, ttl=30d, bearer-env=VAR, bearer-file=PATH, user-env=VAR, password-env=VAR). "
                   + "Default: $IMGCACHE_REMOTE, else the namespace's (--remember)"),
        .flag(.remoteReshare, help: "Write local hits to the remote stores too (else only new downloads)"),
        .flag(.remember, help: "Save the --remote list as the namespace's, for later runs"),
    ]



    /// How a list of URLs is read: by fetch -i and prefetch.
    static let listOptions: [OptionSpec] = [
        .value(.inputFormat, metavar: "FORMAT", kind: .choice(ValueKind.Words(ListFormat.Kind.allCases.map(\.rawValue))),
               help: "How the list is written: lines (one URL per line), csv, tsv or jsonl (a table, one row per URL). "
                   + "Default: from the file's name (.csv, .tsv, .jsonl, each maybe .gz), else lines; gzip is read as it comes"),
        .value(.urlColumn, metavar: "NAME", kind: .text,
               help: "The table's column (JSONL member) holding the URL (default url); the row's other columns go into its --json line"),
    ]

    /// `--all-namespaces`, shared by the maintenance commands.
    static let allNamespaces = OptionSpec.flag(.allNamespaces, help: "Every namespace under the cache root, one after another")










    /// Every command, as the type that reads its arguments and runs it, in
    /// the order help lists them: adding a command is its file and a line here.
    static let subcommands: [any Subcommand.Type] = [
        FetchArguments.self, PrefetchArguments.self, ServeArguments.self, ExportArguments.self, ListArguments.self, CacheInfoArguments.self, CleanArguments.self,
        ClearArguments.self, RemoveArguments.self, ConfigArguments.self, RemoteArguments.self, CompletionsRequest.self,
        HelpRequest.self,
    ]

    /// All commands' table entries, in the order help lists them.
    public static let commands: [CommandSpec] = subcommands.map { $0.spec }

    /// The command called `name`.
    static func subcommand(named name: String) -> (any Subcommand.Type)? {
        subcommands.first { $0.name == name }
    }

    /// The command called `name`, if there is one. Only its table entry is built (each is a
    /// lazily made static): a run builds its own command's, not all twelve.
    public static func command(named name: String) -> CommandSpec? {
        subcommand(named: name)?.spec
    }
}

/// When messages use colour.
public enum ColorChoice: String, CaseIterable, Equatable, Sendable {
    case auto, always, never
}
