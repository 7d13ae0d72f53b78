/// A count and its noun, in the singular for one ("1 entry", "2 entries").
public enum Plural {
    /// `count` and `singular`, or `plural` (by default `singular` + "s") for any count but 1.
    public static func count(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
    }
}
