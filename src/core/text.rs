//! Splitting outbound text to a platform's message limit, on line boundaries.

/// Splits `text` into chunks of at most `limit` characters (Unicode scalar values), breaking
/// after a newline where possible, else at the limit. Concatenating the chunks gives `text`
/// back exactly; no chunk is empty (an empty input gives no chunks).
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    split_by(text, limit, |_| 1)
}

/// [`split_message`] with the limit in UTF-16 code units, as Telegram counts a message's
/// 4096: a character outside the Basic Multilingual Plane (most emoji) counts twice.
pub fn split_message_utf16(text: &str, limit: usize) -> Vec<String> {
    split_by(text, limit, char::len_utf16)
}

/// Splits with each character weighing `weight(c)` units against `limit`.
fn split_by(text: &str, limit: usize, weight: impl Fn(char) -> usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // Byte index just past the longest prefix that weighs at most `limit`, or the end.
        let mut used = 0;
        let hard = rest
            .char_indices()
            .find(|&(_, c)| {
                used += weight(c);
                used > limit
            })
            .map_or(rest.len(), |(i, _)| i);
        // A single character heavier than the limit still goes out whole (progress).
        let hard = if hard == 0 { rest.chars().next().map_or(rest.len(), char::len_utf8) } else { hard };
        if hard == rest.len() {
            out.push(rest.to_string());
            break;
        }
        let cut = rest[..hard].rfind('\n').map_or(hard, |i| i + 1);
        out.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn telegram_counts_utf16_code_units() {
        // 3000 emoji are 3000 chars but 6000 UTF-16 units: over Telegram's 4096.
        let text = "😀".repeat(3000);
        assert_eq!(split_message(&text, 4096).len(), 1, "by chars it would be one message");
        let parts = split_message_utf16(&text, 4096);
        assert_eq!(parts.iter().map(|p| p.encode_utf16().count()).collect::<Vec<_>>(), vec![4096, 1904]);
        assert_eq!(parts.concat(), text);
        // A pair is never cut in half: an odd limit leaves the last emoji for the next chunk.
        let parts = split_message_utf16(&"😀".repeat(5), 5);
        assert_eq!(parts.iter().map(|p| p.encode_utf16().count()).collect::<Vec<_>>(), vec![4, 4, 2]);
    }

    #[test]
    fn short_text_is_one_chunk() {
        assert_eq!(split_message("hi", 4096), vec!["hi"]);
        assert!(split_message("", 10).is_empty());
    }

    #[test]
    fn breaks_on_lines() {
        let text = format!("{}\n{}\n", "a".repeat(3000), "b".repeat(3000));
        let parts = split_message(&text, 4096);
        assert_eq!(parts, vec![format!("{}\n", "a".repeat(3000)), format!("{}\n", "b".repeat(3000))]);
    }

    #[test]
    fn long_line_is_cut_hard() {
        let parts = split_message(&"x".repeat(5000), 2000);
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), vec![2000, 2000, 1000]);
    }

    proptest! {
        #[test]
        fn chunks_round_trip_and_respect_limit(text in "(?s).{0,600}", limit in 1usize..80) {
            let parts = split_message(&text, limit);
            prop_assert_eq!(parts.concat(), text);
            for p in &parts {
                prop_assert!(!p.is_empty());
                prop_assert!(p.chars().count() <= limit);
            }
        }

        #[test]
        fn utf16_chunks_round_trip_and_respect_limit(text in "(?s)[a-z\n😀é]{0,300}", limit in 2usize..80) {
            let parts = split_message_utf16(&text, limit);
            prop_assert_eq!(parts.concat(), text);
            for p in &parts {
                prop_assert!(!p.is_empty());
                prop_assert!(p.encode_utf16().count() <= limit);
            }
        }
    }
}
