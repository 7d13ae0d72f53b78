import ImgCacheCore

/// What a request's processing options ask, read with imgproxy's names and meanings, and the
/// variant (`ImageTransform`) that makes it of a source.
public struct ProcessingOptions: Equatable, Sendable {
    /// imgproxy's resizing types.
    public enum ResizingType: String, Sendable, CaseIterable {
        case fit, fill, fillDown = "fill-down", force, auto
    }

    public var resizingType = ResizingType.fit
    /// 0: as the other side and the proportions give.
    public var width = 0
    public var height = 0
    public var enlarge = false
    public var extend = false
    public var gravity = ImageTransform.Gravity.centre
    /// 0: the encoder's default.
    public var quality = 0
    public var format: ImageFormat?
    public var dpr = 1.0
    public var background: RGBColor?

    /// The largest side a request may ask for (before `dpr`).
    public static let largestSide = 16_384

    public init() {}

    /// Why an option cannot be taken: a 400, naming it.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `options` in order (a later one overrides an earlier), presets expanded where
    /// they stand, then the path's extension (`@png`, `.webp`) as `format`.
    public init(_ options: [ImgproxyPath.Option], fileExtension: String?, presets: PresetTable) throws(Problem) {
        var expanding: Set<String> = []
        if let defaults = presets.options(named: "default") {
            try apply(defaults, presets: presets, expanding: &expanding)
        }
        try apply(options, presets: presets, expanding: &expanding)
        if let fileExtension {
            format = try ProcessingOptions.format(fileExtension, option: "the extension")
        }
    }

    private mutating func apply(_ options: [ImgproxyPath.Option], presets: PresetTable, expanding: inout Set<String>) throws(Problem) {
        for option in options {
            let arguments = option.arguments
            func argument(_ index: Int) -> String? {
                index < arguments.count && !arguments[index].isEmpty ? arguments[index] : nil
            }
            func expect(_ range: ClosedRange<Int>) throws(Problem) {
                guard range.contains(arguments.count) else {
                    throw Problem(description: "option '\(option.name)' takes \(range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)") argument(s), not \(arguments.count)")
                }
            }
            // An empty argument keeps the current value, as in imgproxy (`w:` changes nothing).
            if arguments.count == 1, arguments[0].isEmpty, option.name != "preset", option.name != "pr",
               option.name != "background", option.name != "bg" { continue }
            switch option.name {
            case "resize", "rs":
                try expect(1...6)
                if let type = argument(0) { resizingType = try ProcessingOptions.resizingType(type) }
                if let width = argument(1) { self.width = try ProcessingOptions.side(width, option: option.name) }
                if let height = argument(2) { self.height = try ProcessingOptions.side(height, option: option.name) }
                if let enlarge = argument(3) { self.enlarge = try ProcessingOptions.boolean(enlarge, option: option.name) }
                if let extend = argument(4) { self.extend = try ProcessingOptions.boolean(extend, option: option.name) }
                if let gravity = argument(5) { self.gravity = try ProcessingOptions.gravity(gravity) }
            case "size", "s":
                try expect(1...5)
                if let width = argument(0) { self.width = try ProcessingOptions.side(width, option: option.name) }
                if let height = argument(1) { self.height = try ProcessingOptions.side(height, option: option.name) }
                if let enlarge = argument(2) { self.enlarge = try ProcessingOptions.boolean(enlarge, option: option.name) }
                if let extend = argument(3) { self.extend = try ProcessingOptions.boolean(extend, option: option.name) }
                if let gravity = argument(4) { self.gravity = try ProcessingOptions.gravity(gravity) }
            case "resizing_type", "rt":
                try expect(1...1)
                resizingType = try ProcessingOptions.resizingType(arguments[0])
            case "width", "w":
                try expect(1...1)
                width = try ProcessingOptions.side(arguments[0], option: option.name)
            case "height", "h":
                try expect(1...1)
                height = try ProcessingOptions.side(arguments[0], option: option.name)
            case "enlarge", "el":
                try expect(1...1)
                enlarge = try ProcessingOptions.boolean(arguments[0], option: option.name)
            case "extend", "ex":
                try expect(1...4)
                extend = try ProcessingOptions.boolean(arguments[0], option: option.name)
                if let gravity = argument(1) { self.gravity = try ProcessingOptions.gravity(gravity) }
                try ProcessingOptions.refuseOffsets(argument(2), argument(3), option: option.name)
            case "gravity", "g":
                try expect(1...3)
                gravity = try ProcessingOptions.gravity(arguments[0])
                try ProcessingOptions.refuseOffsets(argument(1), argument(2), option: option.name)
            case "quality", "q":
                try expect(1...1)
                guard let value = Int(arguments[0]), (0...100).contains(value) else {
                    throw Problem(description: "option '\(option.name)': quality is 0 (the default) to 100, not '\(arguments[0])'")
                }
                quality = value
            case "format", "f", "ext":
                try expect(1...1)
                format = try ProcessingOptions.format(arguments[0], option: "option '\(option.name)'")
            case "dpr":
                try expect(1...1)
                guard let value = Double(arguments[0]), value > 0, value <= 8 else {
                    throw Problem(description: "option 'dpr': a number above 0 and at most 8, not '\(arguments[0])'")
                }
                dpr = value
            case "background", "bg":
                try expect(1...3)
                if arguments.count == 3 {
                    guard let red = UInt8(arguments[0]), let green = UInt8(arguments[1]), let blue = UInt8(arguments[2]) else {
                        throw Problem(description: "option '\(option.name)': R:G:B, each 0 to 255")
                    }
                    background = RGBColor(red: red, green: green, blue: blue)
                } else if arguments.count == 1, arguments[0].isEmpty {
                    background = nil
                } else if arguments.count == 1, arguments[0].utf8.count == 6, let color = try? RGBColor(parsing: "#" + arguments[0]) {
                    background = color
                } else {
                    throw Problem(description: "option '\(option.name)': R:G:B or a hex colour (ff8800)")
                }
            case "strip_metadata", "sm":
                try expect(1...1)
                // Variants never carry the source's metadata: only asking to keep it is refused.
                guard try ProcessingOptions.boolean(arguments[0], option: option.name) else {
                    throw Problem(description: "option '\(option.name)': metadata is always stripped; strip_metadata:false is not supported")
                }
            case "preset", "pr":
                guard !arguments.isEmpty else { throw Problem(description: "option '\(option.name)' names no preset") }
                for name in arguments {
                    guard let preset = presets.options(named: name) else {
                        throw Problem(description: "no preset named '\(name)'")
                    }
                    guard expanding.insert(name).inserted else { throw Problem(description: "preset '\(name)' includes itself") }
                    try apply(preset, presets: presets, expanding: &expanding)
                    expanding.remove(name)
                }
            default:
                throw Problem(description: "option '\(option.name)' is not supported")
            }
        }
    }

    /// Gravity's X and Y offsets, which are not done: anything but absent or 0 is refused.
    static func refuseOffsets(_ x: String?, _ y: String?, option: String) throws(Problem) {
        guard [x, y].allSatisfy({ $0 == nil || $0 == "0" }) else {
            throw Problem(description: "option '\(option)': gravity offsets are not supported")
        }
    }

    static func side(_ text: String, option: String) throws(Problem) -> Int {
        guard let value = Int(text), (0...largestSide).contains(value) else {
            throw Problem(description: "option '\(option)': a size is 0 to \(largestSide) pixels, not '\(text)'")
        }
        return value
    }

    static func boolean(_ text: String, option: String) throws(Problem) -> Bool {
        switch text {
        case "1", "t", "true": return true
        case "0", "f", "false": return false
        default: throw Problem(description: "option '\(option)': 1, t or true, or 0, f or false, not '\(text)'")
        }
    }

    static func resizingType(_ text: String) throws(Problem) -> ResizingType {
        guard let type = ResizingType(rawValue: text) else {
            throw Problem(description: "resizing type '\(text)' is not supported (fit, fill, fill-down, force, auto)")
        }
        return type
    }

    static func gravity(_ text: String) throws(Problem) -> ImageTransform.Gravity {
        switch text {
        case "ce": return .centre
        case "no": return .north
        case "so": return .south
        case "ea": return .east
        case "we": return .west
        case "noea": return .northEast
        case "nowe": return .northWest
        case "soea": return .southEast
        case "sowe": return .southWest
        default: throw Problem(description: "gravity '\(text)' is not supported (ce, no, so, ea, we, noea, nowe, soea, sowe)")
        }
    }

    static func format(_ text: String, option: String) throws(Problem) -> ImageFormat {
        let name = text.lowercased()
        guard let format = ImageFormat(fileExtension: name) ?? ImageFormat(rawValue: name),
              ImageEncoder.writableFormats.contains(format) else {
            let names = ImageEncoder.writableFormats.map(\.fileExtension).joined(separator: ", ")
            throw Problem(description: "\(option): '\(text)' is not a format imgcache writes (\(names))")
        }
        return format
    }

    /// The box asked for, `dpr` applied; nil when neither side is given.
    public var box: ImageTransform.BoxSize? {
        guard width > 0 || height > 0 else { return nil }
        func scaled(_ side: Int) -> Int? { side > 0 ? min(65_535, max(1, Int((Double(side) * dpr).rounded()))) : nil }
        return ImageTransform.BoxSize(width: scaled(width), height: scaled(height))
    }

    /// Whether the variant depends on the source's proportions (`auto`), so it is known only
    /// with the source's size.
    public var needsSourceSize: Bool { resizingType == .auto && width > 0 && height > 0 }

    /// The variant of a source of `sourceSize` (upright) in `format` (nil: the source's own).
    public func transform(sourceSize: (width: Int, height: Int)?, format: ImageFormat?) -> ImageTransform {
        var transform = ImageTransform(thumbnail: box, format: format)
        // Always encoded anew: the source's metadata never goes out, and `q` always applies.
        transform.reencodes = true
        transform.padsToBox = true
        transform.quality = quality > 0 ? quality : ImageEncoder.Settings.defaultQuality(for: format)
        if let background { transform.background = background }
        transform.upscale = enlarge
        transform.gravity = gravity
        guard let box = transform.thumbnail else { return transform }
        var type = resizingType
        if type == .auto {
            // Fill when the source and the box lie the same way, else fit.
            if let size = sourceSize, box.isComplete {
                let sourceWide = size.width >= size.height, boxWide = box.width! >= box.height!
                type = sourceWide == boxWide ? .fill : .fit
            } else {
                type = .fit
            }
        }
        switch type {
        case .fit, .auto: transform.fit = extend && box.isComplete ? .contain : .inside
        case .fill, .fillDown: transform.fit = box.isComplete ? .cover : .inside
        case .force: transform.fit = box.isComplete ? .fill : .inside
        }
        if transform.fit == .contain { transform.padding = background }
        if transform.fit != .cover && transform.fit != .contain { transform.gravity = .centre }
        return transform
    }
}
