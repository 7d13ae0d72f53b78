import ImgCacheCore

/// Writes a contact sheet (`list --html`, `prefetch --html-report`): each
/// image's thumbnail is made from the cached original only (nothing
/// downloaded). Looking is not using: no entry is marked used, and the
/// thumbnails are not stored (a thumbnail already cached is taken).
struct ContactSheet {
    let cache: DiskCache
    let console: Console
    let environment: Environment

    /// The variant every sheet shows: a WebP in a 200 px box (an animation keeps its frames).
    static var thumbnails: ManagerArguments {
        var manager = ManagerArguments()
        manager.settings.options.insert(.fromCacheOnly)
        manager.settings.options.insert(.cacheMemoryOnly)
        var transform = ImageTransform(thumbnail: .init(width: ContactSheetPage.thumbnailSide, height: ContactSheetPage.thumbnailSide),
                                       format: .webp)
        transform.quality = 70
        manager.settings.variants = [transform]
        manager.usesRemotes = false
        return manager
    }

    /// Writes the sheet of `items` (their thumbnails looked up or made) and `failures` through `write`.
    /// Returns the run's exit status: a thumbnail that cannot be made is shown as none, not an error.
    func write(title: String, items: [ContactSheetPage.Item], failures: [(url: String, reason: String, at: Double?)],
               summary: String, write: (String) throws(SystemError) -> Void) throws(SystemError) -> ExitStatus {
        try write(ContactSheetPage.start(title: title))
        var status = ExitStatus.success
        if !items.isEmpty {
            let fetcher: ImageFetcher
            var looking = cache
            looking.marksUse = false
            switch ManagerSetup.fetcher(ContactSheet.thumbnails, cache: looking, console: console, environment: environment) {
            case .success(let made): fetcher = made
            case .failure(let failed): return failed
            }
            defer { fetcher.close() }
            try fetcher.fetch(items.map(\.url)) { (index, answer) throws(SystemError) in
                var item = items[index]
                if case .success(let result) = answer, let bytes = try? FileSystem.readFile(result.path, limit: 16 << 20),
                   let width = result.metadata.uprightSize.width, let height = result.metadata.uprightSize.height {
                    item.thumbnail = ("data:image/webp;base64," + Base64.encoded(bytes), width, height)
                }
                try write(ContactSheetPage.figure(item))
            }
            if fetcher.interruption.signal != nil { status = ManagerSetup.interruptedStatus(fetcher, console: console) }
        }
        try write(ContactSheetPage.failuresStart(count: failures.count))
        for failure in failures { try write(ContactSheetPage.failure(url: failure.url, reason: failure.reason, at: failure.at)) }
        try write(ContactSheetPage.end(summary: summary))
        return status
    }
}
