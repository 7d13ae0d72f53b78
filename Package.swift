// swift-tools-version:6.0
import PackageDescription

/// C libraries come from Debian's -dev packages. The shim compiles against their
/// headers but loads them with dlopen only when a command needs them, so a cache
/// hit never pays for libcurl's start-up (several milliseconds of dynamic
/// linking). These targets link them directly, for the tests that check the
/// shim's table against the real libraries.
let systemLibraries: [Target] = [
    .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
    .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg-dev"])]),
    .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
    .systemLibrary(name: "CGIF", pkgConfig: "libgif", providers: [.apt(["libgif-dev"])]),
]

/// Nothing here uses regular expressions or Swift concurrency (threads and
/// mutexes do the work), so the modules the compiler would import implicitly
/// are left out: linked in, their runtimes (and libdispatch under them) cost
/// every start-up some 9,000 relocations. A generic type's metadata is got
/// through its accessor, not by demangling its name at first use: a name makes
/// the runtime look each conformance up by scanning every conformance record
/// (some 100,000 instructions for each type a run first uses, a `Set` of keys,
/// a dictionary of options).
let leanImports: [SwiftSetting] = [
    .unsafeFlags(["-Xfrontend", "-disable-implicit-string-processing-module-import",
                  "-Xfrontend", "-disable-implicit-concurrency-module-import",
                  "-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"]),
]

let package = Package(
    name: "imgcache",
    products: [
        .executable(name: "imgcache", targets: ["imgcache"]),
        .executable(name: "imgcache-serve", targets: ["imgcache-serve"]),
        .library(name: "ImgCacheCore", targets: ["ImgCacheCore"]),
    ],
    // SwiftNIO only for the image server, a program of its own that `imgcache serve`
    // runs: the command-line tool links none of it, so its start-up pays nothing.
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: systemLibraries + [
        .target(name: "CImgCacheShims", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "ImgCacheCore", dependencies: ["CImgCacheShims"], swiftSettings: leanImports),
        .target(name: "ImgCacheCLI", dependencies: ["ImgCacheCore"], swiftSettings: leanImports),
        .executableTarget(name: "imgcache", dependencies: ["ImgCacheCLI", "ImgCacheCore"], swiftSettings: leanImports,
                         linkerSettings: [.unsafeFlags(["-Xlinker", "--no-export-dynamic"])]),
        // What the image server decides (its URLs, signatures, negotiation, memory tier,
        // metrics), without the network: the unit tests drive it directly.
        .target(name: "ImgCacheServe", dependencies: ["ImgCacheCore", "CImgCacheShims"]),
        .executableTarget(name: "imgcache-serve",
                          dependencies: ["ImgCacheServe", "ImgCacheCLI", "ImgCacheCore",
                                         .product(name: "NIOCore", package: "swift-nio"),
                                         .product(name: "NIOPosix", package: "swift-nio"),
                                         .product(name: "NIOHTTP1", package: "swift-nio")]),
        // The codec work alone, over a folder of images, for `make bench`.
        .executableTarget(name: "imgcache-codec-bench", dependencies: ["ImgCacheCore"]),
        .testTarget(name: "ImgCacheCoreTests", dependencies: ["ImgCacheCore"]),
        .testTarget(name: "ImgCacheCLITests", dependencies: ["ImgCacheCLI", "ImgCacheCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["ImgCacheCore"]),
        .testTarget(name: "ImgCacheServeTests", dependencies: ["ImgCacheServe", "ImgCacheCore", "CImgCacheShims"]),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CImgCacheShims", "ImgCacheCore", "CCurl", "COpenSSL", "CPNG", "CJPEG", "CWebP", "CGIF"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
