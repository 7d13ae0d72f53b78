import ImgCacheCLI
import ImgCacheCore
import Testing

/// The parser is a pure function: every option and every error, no process needed.
@Suite struct CommandLineParserTests {
    func parse(_ words: String) throws(UsageError) -> Invocation {
        try CommandLineParser.parse(words.split(separator: " ").map(String.init))
    }

    func fetch(_ words: String) throws -> (GlobalOptions, FetchArguments) {
        guard case .run(let globals, let command) = try parse(words), let arguments = command.arguments(as: FetchArguments.self) else {
            Issue.record("not a fetch: \(words)")
            throw UsageError.missingCommand
        }
        return (globals, arguments)
    }

    func error(_ words: [String]) -> UsageError? {
        do { _ = try CommandLineParser.parse(words); return nil } catch { return error }
    }

    func error(_ words: String) -> UsageError? { error(words.split(separator: " ").map(String.init)) }

    @Test func fetchTakesOneOrMoreURLs() throws {
        #expect(try fetch("fetch http://a/1.png").1 == FetchArguments(urls: ["http://a/1.png"]))
        #expect(try fetch("fetch http://a/1.png http://a/2.png").1.urls == ["http://a/1.png", "http://a/2.png"])
    }

    @Test func globalOptionsGoBeforeOrAfterTheCommand() throws {
        let (before, _) = try fetch("--cache-dir /c -n ns --json -v --color never fetch u")
        let (after, _) = try fetch("fetch u --cache-dir /c -n ns --json -v --color never")
        var expected = GlobalOptions()
        expected.cacheDirectory = "/c"
        expected.namespace = "ns"
        expected.json = true
        expected.verbosity = 1
        expected.color = .never
        #expect(before == expected)
        #expect(after == expected)
    }

    @Test func optionValuesWithEqualsOrAsTheNextWord() throws {
        #expect(try fetch("fetch --output=x.png u").1.output == "x.png")
        #expect(try fetch("fetch --output x.png u").1.output == "x.png")
        #expect(try fetch("fetch -o x.png u").1.output == "x.png")
        #expect(try fetch("fetch -ox.png u").1.output == "x.png")
        #expect(try fetch("--namespace=a fetch u").0.namespace == "a")
        #expect(try fetch("--cache-dir=/d fetch u").0.cacheDirectory == "/d")
    }

    @Test func shortFlagsBundleAndAValueOptionEndsTheBundle() throws {
        let (globals, arguments) = try fetch("fetch -vvo out.png u")
        #expect(globals.verbosity == 2)
        #expect(arguments.output == "out.png")
        #expect(try fetch("-vv fetch -v u").0.verbosity == 3)
    }

    @Test func quietAndJSON() throws {
        #expect(try fetch("-q fetch u").0.quiet)
        #expect(try fetch("fetch u --quiet").0.quiet)
        #expect(try fetch("fetch u --json").0.json)
    }

    @Test func colorAcceptsItsThreeValues() throws {
        for choice in ColorChoice.allCases {
            #expect(try fetch("--color \(choice.rawValue) fetch u").0.color == choice)
        }
        #expect(try fetch("fetch u").0.color == .auto)
    }

    @Test func doubleDashEndsOptionsAndDashIsAnOperand() throws {
        #expect(try fetch("fetch -- --json").1.urls == ["--json"])
        #expect(try fetch("fetch -o - u").1.output == "-")
        // A lone '-' is the list on standard input.
        #expect(try fetch("fetch - ").1.input == "-")
        #expect(try fetch("fetch - ").1.urls == [])
        #expect(try fetch("fetch -i list.txt").1.input == "list.txt")
        #expect(try fetch("fetch -- -").1.input == "-")
    }

    @Test func aLaterValueOverridesAnEarlierOne() throws {
        #expect(try fetch("-n a fetch -n b u").0.namespace == "b")
    }

    @Test func helpAndVersionAreValues() throws {
        #expect(try parse("--help") == .help(command: nil))
        #expect(try parse("-h") == .help(command: nil))
        #expect(try parse("fetch --help") == .help(command: "fetch"))
        #expect(try parse("fetch -h u") == .help(command: "fetch"))
        #expect(try parse("help") == .help(command: nil))
        #expect(try parse("help fetch") == .help(command: "fetch"))
        #expect(try parse("clean --help") == .help(command: "clean"))
        #expect(try parse("--version") == .version(verbose: false))
        #expect(try parse("fetch --version") == .version(verbose: false))
        #expect(try parse("-v --version") == .version(verbose: true))
    }

    @Test func aMissingOperandIsNamedWithTheWordsItMayBe() {
        #expect(error("completions") == .missingOperand(command: "completions", operand: "SHELL (bash, zsh or fish)"))
        #expect(error("remote") == .missingOperand(command: "remote", operand: "ACTION (check)"))
    }

    @Test func ofAChoiceGivenTwiceTheLastCountsAsForAnyOption() throws {
        #expect(error("--color bogus --color never list") == nil)
        #expect(error("--sort size --sort bogus list") != nil)
        #expect(error("list --sort bogus --sort size") == nil)
    }

    @Test func noCommand() {
        #expect(error("") == .missingCommand)
        #expect(error("--json") == .missingCommand)
    }

    @Test func unknownCommandsGetASuggestion() {
        #expect(error("fecth u") == .unknownCommand("fecth", suggestion: "fetch"))
        #expect(error("cache-inf") == .unknownCommand("cache-inf", suggestion: "cache-info"))
        #expect(error("claen") == .unknownCommand("claen", suggestion: "clean"))
        #expect(error("zzzzzz") == .unknownCommand("zzzzzz", suggestion: nil))
        #expect(error("help fecth") == .unknownCommand("fecth", suggestion: "fetch"))
    }

    @Test func unknownOptionsGetASuggestion() {
        #expect(error("fetch --jsn u") == .unknownOption("--jsn", command: "fetch", suggestion: "--json"))
        #expect(error("fetch --outptu x u") == .unknownOption("--outptu", command: "fetch", suggestion: "--output"))
        #expect(error("--namespac x fetch u") == .unknownOption("--namespac", command: nil, suggestion: "--namespace"))
        #expect(error("fetch -z u") == .unknownOption("-z", command: "fetch", suggestion: nil))
        // A command's option before the command: which commands take it, and where it goes.
        #expect(error("--thumbnail 64x fetch u") == .optionBeforeCommand("--thumbnail", commands: ["fetch", "prefetch", "export"]))
        #expect(UsageError.optionBeforeCommand("--all-namespaces", commands: ["clean", "cache-info"]).message
                == "'--all-namespaces' is an option of clean or cache-info, not of imgcache itself: give it after the command (imgcache clean --all-namespaces ...)")
        // A stem of one option is not taken for another that merely begins with it.
        #expect(error("fetch --retry 3 u") == .unknownOption("--retry", command: "fetch", suggestion: "--retries"))
        // curl's -m is --max-time.
        #expect(error("fetch -m 5 u") == nil)
        #expect(error("fetch --frobnicate u") == .unknownOption("--frobnicate", command: "fetch", suggestion: nil))
        // A command's option is not a global one.
        #expect(error("-o x fetch u") == .unknownOption("-o", command: nil, suggestion: nil))
    }

    @Test func missingAndUnexpectedValues() {
        #expect(error("fetch u -o") == .missingValue(option: "-o", metavar: "FILE"))
        #expect(error("fetch u --output") == .missingValue(option: "--output", metavar: "FILE"))
        #expect(error("--cache-dir") == .missingValue(option: "--cache-dir", metavar: "DIR"))
        #expect(error("fetch u --json=yes") == .unexpectedValue(option: "--json"))
    }

    @Test func invalidValues() {
        #expect(error("--color sometimes fetch u")
            == .invalidValue(option: "--color", value: "sometimes", reason: "expected auto, always or never"))
        #expect(error(["--cache-dir", "", "fetch", "u"])
            == .invalidValue(option: "--cache-dir", value: "", reason: "the path is empty"))
        #expect(error(["fetch", "-o", "", "u"]) == .invalidValue(option: "--output", value: "", reason: "the path is empty"))
        guard case .invalidValue(option: "--namespace", value: "../x", _)? = error("-n ../x fetch u") else {
            Issue.record("namespace with ..")
            return
        }
    }

    @Test(arguments: ["../x", "a/b", ".hidden", "-dash", "sp ace", "", String(repeating: "n", count: 65)])
    func badNamespacesAreUsageErrors(name: String) {
        guard case .invalidValue(option: "--namespace", value: name, _)? = error(["-n", name, "fetch", "u"]) else {
            Issue.record("accepted namespace \(name)")
            return
        }
    }

    @Test func operandsAndCombinations() {
        #expect(error("fetch") == .missingOperand(command: "fetch", operand: "a URL (or --input FILE)"))
        // One srcset, one shape: cover crops of two shapes are refused for a page, taken otherwise.
        #expect(error("fetch --html --thumbnail 375x375,1400x788 --fit cover u")?.message.contains("makes boxes of two shapes") == true)
        #expect(error("fetch --srcset --thumbnail 320x180,640x360,1280x720 --fit cover u") == nil)
        // One shape to a pixel of rounding: the usual 16:9 ladder is one; 16:10 beside it is another.
        #expect(error("fetch --html --thumbnail 426x240,640x360,854x480,1280x720 --fit cover u") == nil)
        #expect(error("fetch --html --thumbnail 640x400,1280x720 --fit cover u")?.message.contains("makes boxes of two shapes") == true)
        #expect(error("fetch --thumbnail 375x375,1400x788 --fit cover u") == nil)
        // The URL taken as an option's value is named, with the option as it is spelled short.
        #expect(error("fetch -j http://h/a.png") == .missingOperand(command: "fetch", operand:
            "a URL (or --input FILE): -j took 'http://h/a.png' as its value (-j N); give -j its value before the URL"))
        #expect(error("fetch --user http://h/a.png")?.message.contains("-u took 'http://h/a.png' as its value") == true)
        #expect(error("fetch -o a.png -o b.png http://h/a.png")
            == .conflictingOptions("--output a.png", "--output b.png", reason: "give --output once (one URL, one file; --output-dir for several)"))
        #expect(error("fetch -i list.txt u") == .conflictingOptions("--input", "URL operands", reason: "the URLs come from the list"))
        #expect(error("fetch - u") == .conflictingOptions("-", "URL operands", reason: "'-' reads the URLs from standard input"))
        #expect(error("fetch -i list.txt -o out.png")
            == .conflictingOptions("--output", "a list of URLs", reason: "--output writes one image"))
        #expect(error("fetch --with-url -o out.png u")
            == .conflictingOptions("--with-url", "--output out.png", reason: "--output prints no paths"))
        #expect(error("fetch -o x.png u1 u2")
            == .conflictingOptions("--output", "several URLs", reason: "--output writes one image"))
        #expect(error("--json fetch -o - u")
            == .conflictingOptions("--output -", "--json", reason: "both write to standard output"))
        #expect(error("-q -v fetch u") == .conflictingOptions("--quiet", "--verbose", reason: "choose one"))
        #expect(error("help fetch clean") == .unexpectedOperand(command: "help", operand: "clean"))
    }

    @Test func everyErrorHasAMessageAndAHint() {
        let errors: [UsageError] = [
            .missingCommand, .unknownCommand("x", suggestion: nil), .unknownOption("-x", command: "fetch", suggestion: "--json"),
            .missingValue(option: "-o", metavar: "FILE"), .unexpectedValue(option: "--json"),
            .invalidValue(option: "--color", value: "x", reason: "r"), .missingOperand(command: "fetch", operand: "a URL"),
            .unexpectedOperand(command: "help", operand: "x"), .conflictingOptions("a", "b", reason: "c"),
            .invalidEnvironment("bad"), .requires("--remember", "--max-size or --max-age"),
        ]
        for error in errors {
            #expect(!error.message.isEmpty && !error.message.contains("\n"))
            #expect(error.hint.hasPrefix("Run 'imgcache "))
        }
        #expect(UsageError.unknownOption("-x", command: "fetch", suggestion: "--json").message
            == "unknown option '-x' for 'fetch' (did you mean '--json'?)")
        #expect(UsageError.unknownOption("-x", command: "fetch", suggestion: nil).hint == "Run 'imgcache fetch --help' for usage.")
    }

    @Test func everyDeclaredOptionParses() throws {
        // Each option of the table, spelled long and short, is accepted where it belongs.
        for spec in CommandTable.globalOptions where !["help", "version"].contains(spec.long) {
            let value = spec.kind == .choice(ValueKind.Words(ColorChoice.allCases.map(\.rawValue))) ? ["never"] : (spec.takesValue ? ["v1"] : [])
            _ = try CommandLineParser.parse(["--" + spec.long] + value + ["fetch", "u"])
            if let short = spec.short { _ = try CommandLineParser.parse(["-\(short)"] + value + ["fetch", "u"]) }
        }
        let samples = ["concurrency": "4", "timeout": "2.5", "retries": "2", "order": "lifo", "priority": "high",
                       "header": "X-A: b", "user": "me:pw", "max-redirects": "3", "max-size": "20M",
                       "key-filter": "strip-query", "failed-ttl": "2h", "options": "retry-failed,0x10",
                       "max-pixels": "2.5M", "verify": "full", "thumbnail": "64x64", "format": "webp", "quality": "80",
                       "max-decode-time": "10s", "max-decode-memory": "512M",
                       "remote": "redis://127.0.0.1|timeout=2s", "connect-timeout": "2s", "max-time": "30",
                       "proxy": "http://127.0.0.1:3128", "netrc-file": "netrc", "output-dir": "out",
                       "background": "white", "fit": "cover", "input-format": "csv", "url-column": "image", "shard": "0/2", "per-host": "2", "rate": "5/s",
                       "deadline": "1h", "name": "{stem}.{ext}", "placeholder": "color", "sizes": "50vw", "site-root": "site",
                       "url-prefix": "/img/", "loading": "eager", "fetchpriority": "high"]
        // Some options need another: --memory-only an output, --format and --quality a transform.
        let companions = ["memory-only": ["-o", "out.png"], "format": ["--thumbnail", "8x8"], "quality": ["--scale-down"],
                          "background": ["--format", "jpeg"], "fit": ["--thumbnail", "8x8"], "upscale": ["--thumbnail", "8x8"],
                          "no-original": ["--format", "png"], "srcset": ["--thumbnail", "8x,16x"],
                          "remember": ["--remote", "http://127.0.0.1/store"],
                          "input-format": ["-i", "list.csv"], "url-column": ["-i", "list.csv"],
                          "name": ["--output-dir", "out"], "prune": ["--output-dir", "out"], "alt": ["--html"], "sizes": ["--html"], "placeholder": ["--html"],
                          "site-root": ["--html"], "url-prefix": ["--html", "--output-dir", "out"],
                          "alt-column": ["--html", "-i", "list.csv"], "loading": ["--html"], "fetchpriority": ["--html"]]
        for spec in CommandTable.command(named: "fetch")!.options {
            let value = (spec.takesValue ? [samples[spec.long] ?? "v1"] : []) + (companions[spec.long] ?? [])
            // --input brings the URLs itself (and the list options need it).
            let operands = ["input", "input-format", "url-column", "alt-column"].contains(spec.long) ? [] : ["u"]
            _ = try CommandLineParser.parse(["fetch", "--" + spec.long] + value + operands)
            if let short = spec.short { _ = try CommandLineParser.parse(["fetch", "-\(short)"] + value + operands) }
        }
        for spec in CommandTable.command(named: "prefetch")!.options {
            // (prefetch's list is its operand: no -i.)
            let companion = ["input-format", "url-column"].contains(spec.long) ? [] : companions[spec.long] ?? []
            let value = (spec.takesValue ? [samples[spec.long] ?? "v1"] : []) + companion
            _ = try CommandLineParser.parse(["prefetch", "--" + spec.long] + value + ["list.txt"])
            if let short = spec.short { _ = try CommandLineParser.parse(["prefetch", "-\(short)"] + value) }
        }
        for spec in CommandTable.command(named: "remote")!.options {
            let value = spec.takesValue ? [samples[spec.long] ?? "v1"] : []
            _ = try CommandLineParser.parse(["remote", "check", "--" + spec.long] + value)
            if let short = spec.short { _ = try CommandLineParser.parse(["remote", "check", "-\(short)"] + value) }
        }
    }

    @Test func downloadOptionsBecomeSettings() throws {
        let (_, arguments) = try fetch(
            "fetch -j 12 --timeout 500ms --retries 3 --order lifo --priority low -H X-Trace:_1 -H Accept: "
            + "-u me:p:w --cookies jar.txt -k --max-redirects 2 --max-size 1.5MiB --refresh u")
        let manager = arguments.manager
        #expect(manager.downloads.maximumConcurrentDownloads == 12)
        #expect(manager.downloads.order == .lifo)
        #expect(manager.downloads.cookieJar == "jar.txt")
        #expect(manager.downloads.handleCookies)
        #expect(manager.downloads.allowInvalidCertificates)
        #expect(manager.settings.timeout == 0.5)
        #expect(manager.settings.retries == 3)
        #expect(manager.settings.priority == .low)
        #expect(manager.settings.headers == [HTTPHeader(name: "X-Trace", value: "_1"), HTTPHeader(name: "Accept", value: "")])
        #expect(manager.settings.credentials == Credentials(user: "me", password: "p:w"))
        #expect(manager.settings.maximumRedirects == 2)
        #expect(manager.settings.maximumBytes == 1_572_864)
        #expect(manager.settings.options == [.refreshCached, .lowPriority, .allowInvalidSSLCertificates, .handleCookies])
        let defaults = try fetch("fetch u").1
        #expect(defaults.manager.downloads == DownloadConfiguration())
        #expect(defaults.manager.settings == FetchSettings())
        // A body is 1 GiB at most unless told otherwise (a server sending bytes for ever fills no disk); none lifts it.
        #expect(defaults.manager.settings.maximumBytes == 1 << 30)
        #expect(try fetch("fetch --max-size none u").1.manager.settings.maximumBytes == nil)
    }

    @Test func badDownloadOptionValuesAreUsageErrors() {
        let range = "expected a whole number from 1 to 256"
        #expect(error("fetch -j 0 u") == .invalidValue(option: "--concurrency", value: "0", reason: range))
        #expect(error("fetch -j 257 u") == .invalidValue(option: "--concurrency", value: "257", reason: range))
        #expect(error("fetch --retries -1 u")
            == .invalidValue(option: "--retries", value: "-1", reason: "expected a whole number from 0 to 100"))
        #expect(error("fetch --order random u") == .invalidValue(option: "--order", value: "random", reason: "expected fifo or lifo"))
        #expect(error("fetch --priority urgent u")
            == .invalidValue(option: "--priority", value: "urgent", reason: "expected high, normal or low"))
        guard case .invalidValue(option: "--timeout", value: "soon", _)? = error("fetch --timeout soon u"),
              case .invalidValue(option: "--timeout", value: "0", _)? = error("fetch --timeout 0 u"),
              case .invalidValue(option: "--max-size", value: "12X", _)? = error("fetch --max-size 12X u"),
              case .invalidValue(option: "--header", value: "NoColon", _)? = error("fetch -H NoColon u"),
              case .invalidValue(option: "--header", value: "Bad Name: x", _)? = error(["fetch", "-H", "Bad Name: x", "u"])
        else { Issue.record("a bad value was accepted"); return }
    }

    @Test func aHeaderValueWithALineBreakIsRefusedAndShownEscaped() {
        let refused = error(["fetch", "-H", "X-A: b\r\nInjected: yes", "u"])
        #expect(refused == .invalidValue(option: "--header", value: "X-A: b\r\nInjected: yes",
                                         reason: "the value contains a line break or NUL"))
        #expect(refused?.message == "invalid value 'X-A: b\\r\\nInjected: yes' for --header: the value contains a line break or NUL")
    }

    @Test func aBadUserValueIsNeverRepeated() {
        let refused = error(["fetch", "-u", "me:p\u{7}w", "u"])
        #expect(refused == .invalidValue(option: "--user", value: "…", reason: "control characters are not allowed"))
        #expect(refused?.message.contains("me:") == false)
        #expect(error(["fetch", "-u", "", "u"]) == .invalidValue(option: "--user", value: "…",
                                                                 reason: "expected USER:PASSWORD, or USER to be asked the password"))
    }

    @Test func userWithoutPasswordIsToBeAsked() throws {
        guard case .run(_, let command) = try CommandLineParser.parse(["fetch", "-u", "alice", "u"]),
              let arguments = command.arguments(as: FetchArguments.self) else {
            Issue.record("not a fetch")
            return
        }
        #expect(arguments.manager.asksPassword && arguments.manager.settings.credentials?.user == "alice")
        guard case .run(_, let command) = try CommandLineParser.parse(["fetch", "-u", "alice:pw", "u"]),
              let given = command.arguments(as: FetchArguments.self) else { return }
        #expect(!given.manager.asksPassword)
    }
}
