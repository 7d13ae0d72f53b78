/// What a decode worker is asked to do with one image's bytes: its header
/// read and its structure walked to its end (a body too large to read in
/// imgcache's own process), every pixel of every frame decoded (`--verify
/// full`), or the original decoded once and each transform applied and
/// encoded (thumbnails, conversions, scale-down).
/// Crosses to the worker as a `WorkerMessage`; the bytes go by descriptor.
struct DecodeJob: Equatable, Sendable {
    enum Work: Equatable, Sendable {
        /// The header read and the format's end looked for, as for a body checked in memory; no pixel decoded.
        case check
        case verify
        case variants([ImageTransform])
    }

    var work: Work
    var maximumPixels: PixelLimit
    /// How a check's answer that the image is cut short begins (the rest says where).
    static let truncation = "truncated: "
    /// `--verify full` with transforms: every pixel decoded whole, damage refused.
    var strict = false

    /// The job as sent.
    var message: WorkerMessage {
        var message = WorkerMessage("job")
        switch work {
        case .check: message.add("work", "check")
        case .verify: message.add("work", "verify")
        case .variants(let transforms):
            message.add("work", "variants")
            for transform in transforms { message.add("transform", transform.wireForm) }
        }
        message.add("maximum-pixels", maximumPixels.pixels)
        message.add("strict", strict ? 1 : 0)
        return message
    }

    /// The job a worker received; nil when the message is not one.
    init?(_ message: WorkerMessage) {
        guard message.kind == "job", let pixels = message.number("maximum-pixels") else { return nil }
        switch message["work"] {
        case "check": work = .check
        case "verify": work = .verify
        case "variants":
            var transforms: [ImageTransform] = []
            for text in message.values("transform") {
                guard let transform = ImageTransform(wireForm: text) else { return nil }
                transforms.append(transform)
            }
            work = .variants(transforms)
        default: return nil
        }
        maximumPixels = PixelLimit(pixels: pixels)
        strict = message["strict"] == "1"
    }

    init(work: Work, maximumPixels: PixelLimit, strict: Bool = false) {
        self.work = work
        self.maximumPixels = maximumPixels
        self.strict = strict
    }
}

/// What a job made: each transform's output, in order (none for a verification); a check's header.
struct DecodeResult: Sendable {
    var outputs: [ImageTransform.Output]
    var header: ImageHeader?

    init(outputs: [ImageTransform.Output], header: ImageHeader? = nil) {
        self.outputs = outputs
        self.header = header
    }
}

/// Why a job made nothing.
enum DecodeFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The decoder refused the bytes: they are no image it can decode, or
    /// hold more pixels than the limit.
    case decode(ImageDecoder.DecodeError)
    /// A variant could not be written.
    case encode(ImageEncoder.EncodeError)
    /// The worker was stopped by one of its limits, crashed, or could not be started.
    case contained(WorkerFailure)
    /// The run was interrupted (SIGINT, SIGTERM) while the job ran.
    case interrupted

    var description: String {
        switch self {
        case .decode(let error): return error.description
        case .encode(let error): return error.description
        case .contained(let failure): return failure.description
        case .interrupted: return "interrupted"
        }
    }
}

extension ImageTransform {
    /// The transform on one line, `name=value` pairs separated by `;`.
    var wireForm: String {
        var parts = ["fit=\(fit.rawValue)", "upscale=\(upscale ? 1 : 0)", "quality=\(quality)", "background=\(background)",
                     "animations=\(transformsAnimations ? 1 : 0)"]
        if let thumbnail { parts.append("thumbnail=\(thumbnail)") }
        if let scaleDownLimit { parts.append("scale-down=\(scaleDownLimit.pixels)") }
        if let format { parts.append("format=\(format.rawValue)") }
        if let padding { parts.append("padding=\(padding)") }
        if gravity != .centre { parts.append("gravity=\(gravity.rawValue)") }
        if padsToBox { parts.append("exact=1") }
        if reencodes { parts.append("reencode=1") }
        if makesPlaceholder { parts.append("placeholder=1") }
        return parts.joined(separator: ";")
    }

    /// The transform `wireForm` wrote; nil when a part does not read.
    init?(wireForm: String) {
        self.init()
        for part in wireForm.split(separator: ";") {
            guard let equals = part.firstIndex(of: "=") else { return nil }
            let name = part[..<equals], value = String(part[part.index(after: equals)...])
            switch name {
            case "fit":
                guard let fit = Fit(rawValue: value) else { return nil }
                self.fit = fit
            case "upscale": upscale = value == "1"
            case "quality":
                guard let quality = Int(value) else { return nil }
                self.quality = quality
            case "background":
                guard let color = try? RGBColor(parsing: value) else { return nil }
                background = color
            case "padding":
                guard let color = try? RGBColor(parsing: value) else { return nil }
                padding = color
            case "gravity":
                guard let gravity = Gravity(rawValue: value) else { return nil }
                self.gravity = gravity
            case "exact": padsToBox = value == "1"
            case "reencode": reencodes = value == "1"
            case "animations": transformsAnimations = value == "1"
            case "placeholder": makesPlaceholder = value == "1"
            case "thumbnail":
                guard let box = BoxSize(parsing: value) else { return nil }
                thumbnail = box
            case "scale-down":
                guard let pixels = Int(value) else { return nil }
                scaleDownLimit = PixelLimit(pixels: pixels)
            case "format":
                guard let format = ImageFormat(rawValue: value) else { return nil }
                self.format = format
            default: return nil
            }
        }
    }
}
