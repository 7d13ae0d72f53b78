import ImgCacheCore

/// `fetch` and `prefetch` arguments from the parsed words.
extension ParsedOptions {
    func fetchArguments(globals: GlobalOptions) throws(UsageError) -> FetchArguments {
        var input = last(.input)
        if let input {
            guard !input.isEmpty else { throw .invalidValue(option: "--input", value: input, reason: "the path is empty") }
            if !operands.isEmpty { throw .conflictingOptions("--input", "URL operands", reason: "the URLs come from the list") }
        } else if operands.contains("-") {
            // `fetch -` reads the list from standard input, as `fetch -i -` does.
            guard operands.count == 1 else { throw .conflictingOptions("-", "URL operands", reason: "'-' reads the URLs from standard input") }
            input = "-"
        } else if operands.isEmpty {
            throw .missingOperand(command: "fetch", operand: "a URL (or --input FILE)")
        }
        let output = last(.output)
        if let output {
            guard !output.isEmpty else { throw .invalidValue(option: "--output", value: output, reason: "the path is empty") }
            if operands.count > 1 || input != nil {
                throw .conflictingOptions("--output", input != nil ? "a list of URLs" : "several URLs", reason: "--output writes one image")
            }
            if output == "-" && globals.json {
                throw .conflictingOptions("--output -", "--json", reason: "both write to standard output")
            }
        }
        var arguments = FetchArguments(urls: input == nil ? operands : [], output: output)
        arguments.input = input
        arguments.withURL = has(.withUrl)
        if let directory = last(.outputDir) {
            guard !directory.isEmpty else { throw .invalidValue(option: "--output-dir", value: directory, reason: "the path is empty") }
            if let output { throw .conflictingOptions("--output-dir", "--output \(output)", reason: "--output names the file itself") }
            arguments.outputDirectory = directory
        }
        if arguments.withURL, let output { throw .conflictingOptions("--with-url", "--output \(output)", reason: "--output prints no paths") }
        if arguments.withURL, globals.json { throw .conflictingOptions("--with-url", "--json", reason: "JSON lines carry the URL already") }
        arguments.manager = try managerArguments(defaultPriority: .normal)
        if let output, var transform = arguments.manager.settings.transform {
            try fitTransform(&transform, toOutput: output)
            arguments.manager.settings.transform = transform
        }
        let options = arguments.manager.settings.options
        if options.contains(.cacheMemoryOnly), output == nil {
            throw .requires("--memory-only", "--output (the image is not stored, so it has no path to print)")
        }
        return arguments
    }

    func prefetchArguments() throws(UsageError) -> PrefetchArguments {
        var arguments = PrefetchArguments(input: operands.first)
        if arguments.input == "" { throw .invalidValue(option: "FILE", value: "", reason: "the path is empty") }
        arguments.showProgress = !has(.noProgress)
        arguments.manager = try managerArguments(defaultPriority: .low)
        if arguments.manager.settings.options.contains(.cacheMemoryOnly) {
            throw .conflictingOptions("CacheMemoryOnly", "prefetch", reason: "prefetch only stores images")
        }
        return arguments
    }
}
