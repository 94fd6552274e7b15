//! Splitting outbound text to a platform's message limit, on line boundaries.

/// Splits `text` into chunks of at most `limit` characters (Unicode scalar values), breaking
/// after a newline where possible, else at the limit. Concatenating the chunks gives `text`
/// back exactly; no chunk is empty (an empty input gives no chunks).
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // Byte index just past the `limit`-th char, or the end.
        let hard = rest.char_indices().nth(limit).map_or(rest.len(), |(i, _)| i);
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
    }
}
