/// An image's variants already in the cache, looked up the one way every path
/// asks for them (a lookup that answers without the original, the maker that
/// reuses what it can, a refresh that failed): a variant stands only for the
/// original it was made from.
struct VariantLookup {
    /// The entry of a key, where the variants are looked for (the cache, or a read-only folder).
    let entry: (CacheKey, Double) -> CacheEntry?
    let settings: FetchSettings

    init(cache: DiskCache, settings: FetchSettings) {
        entry = { key, now in cache.lookup(key, now: now).entry }
        self.settings = settings
    }

    /// The variants another machine's cache holds (`--read-only-path`).
    init(readOnly folder: ReadOnlyCache, settings: FetchSettings) {
        entry = { key, _ in folder.lookup(key) }
        self.settings = settings
    }

    /// The cached variant `transform` of `url`, when it was made from `original`
    /// (nil: from whatever original, for one no longer in the cache).
    /// With `source` (the original's metadata), a variant stored under the key of the transform
    /// that makes the same bytes (`ImageTransform.equivalent`) is found too.
    func variant(_ transform: ImageTransform, of url: String, madeFrom original: EntryMetadata.Source?,
                 source: EntryMetadata? = nil, now: Double) -> FetchResult.Variant? {
        if let entry = entry(settings.variantKey(for: url, transform), now),
           original == nil || entry.metadata.source == original,
           // A placeholder whose colour and hash are not in its metadata (a copy that lost them) is made again.
           !transform.makesPlaceholder || entry.metadata.placeholder != nil {
            return FetchResult.Variant(path: entry.path, metadata: entry.metadata, isStored: true)
        }
        guard let source, let format = source.format,
              let other = transform.equivalent(for: format, frameCount: source.frameCount ?? 1),
              let entry = entry(settings.variantKey(for: url, other), now),
              entry.metadata.source == EntryMetadata.Source(of: source) else { return nil }
        return FetchResult.Variant(path: entry.path, metadata: entry.metadata, isStored: true)
    }

    /// Every variant the settings ask for, when each is cached (and made from
    /// `original`, when given; found under an equivalent key, with `source`); nil when one is missing.
    func all(of url: String, madeFrom original: EntryMetadata.Source?, source: EntryMetadata? = nil,
             now: Double) -> [FetchResult.Variant]? {
        var found: [FetchResult.Variant] = []
        for transform in settings.variants {
            guard let variant = variant(transform, of: url, madeFrom: original, source: source, now: now) else { return nil }
            found.append(variant)
        }
        return found.isEmpty ? nil : found
    }
}
