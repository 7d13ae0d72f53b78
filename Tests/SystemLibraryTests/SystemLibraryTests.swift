import CCurl
import CImgCacheShims
import COpenSSL
import CGIF
import CJPEG
import CPNG
import CWebP
import Foundation
import ImgCacheCore
import Testing

/// The shim loads libraries with dlopen by soname; these tests link the same
/// libraries directly through their pkg-config targets and check that both
/// agree, so the build headers and the run-time libraries cannot drift apart.
@Suite struct SystemLibraryTests {
    @Test func theShimLoadsTheLibcurlTheHeadersDescribe() throws {
        var message = [CChar](repeating: 0, count: 256)
        #expect(ic_curl_load(&message, message.count) == 0)
        let linked = String(cString: curl_version_info(CURLVERSION_FOURTH).pointee.version)
        #expect(String(cString: ic_curl_version()) == linked)
        #expect(linked == LIBCURL_VERSION)
    }

    @Test func theShimLoadsLibpngAndLibjpeg() {
        var message = [CChar](repeating: 0, count: 256)
        #expect(ic_png_load(&message, message.count) == 0)
        #expect(ic_jpeg_load(&message, message.count) == 0)
        #expect(png_access_version_number() / 100 == UInt32(PNG_LIBPNG_VER) / 100)
    }

    @Test func webpAndGifHeadersMatchTheirLibraries() {
        #expect(WebPGetDecoderVersion() >> 8 == 0x0102)
        #expect(GIFLIB_MAJOR == 5)
    }

    @Test func swiftMD5AgreesWithOpenSSLForEveryLengthAcrossBlockBoundaries() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var digest = [UInt8](repeating: 0, count: 16)
            var size: UInt32 = 0
            let ok = bytes.withUnsafeBytes { buffer in
                EVP_Digest(buffer.baseAddress, buffer.count, &digest, &size, EVP_md5(), nil)
            }
            #expect(ok == 1)
            #expect(MD5.digest(bytes) == digest, "length \(length)")
        }
    }

    @Test func headerProbesAgreeWithPillowOnTheFixtures() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/images")
        let table = try String(contentsOf: fixtures.appendingPathComponent("expected.tsv"), encoding: .utf8)
        for line in table.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t").map(String.init)
            let bytes = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(fields[0])))
            let header = try ImageHeader.probe(bytes)
            #expect(header.format.rawValue == fields[1], "\(fields[0])")
            #expect(header.width == Int(fields[2]) && header.height == Int(fields[3]), "\(fields[0])")
            #expect(header.frameCount == Int(fields[4]), "\(fields[0]) frames")
            #expect(header.isAnimated == (Int(fields[4])! > 1), "\(fields[0]) animated")
            #expect(header.hasAlpha == (fields[5] == "1"), "\(fields[0]) alpha")
            #expect(header.bitDepth == Int(fields[6]), "\(fields[0]) depth")
        }
    }

    @Test func libraryErrorsBecomeMessagesNotCrashes() throws {
        // Truncated inside the header: libjpeg would call exit(), libpng would longjmp into nowhere.
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]
        #expect(throws: ImageHeader.ProbeError.self) { try ImageHeader.probe(jpeg) }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48]
        do {
            _ = try ImageHeader.probe(png)
            Issue.record("a truncated PNG was accepted")
        } catch {
            guard case .corrupt(.png, let reason) = error else { Issue.record("\(error)"); return }
            #expect(!reason.isEmpty)
        }
    }
}
