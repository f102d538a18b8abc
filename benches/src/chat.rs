//! The plaintexts every scenario sends: chat-like text of 100 to 200 bytes.

/// A chat-like plaintext of 100 to 200 bytes, deterministic in `index` and varied across it.
pub fn chat_plaintext(index: usize) -> Vec<u8> {
    const WORDS: [&str; 24] = [
        "hey", "are", "we", "still", "on", "for", "lunch", "tomorrow", "I", "think", "the",
        "train", "is", "late", "again", "sounds", "good", "see", "you", "at", "noon", "thanks",
        "so", "much",
    ];
    let target = 100 + index.wrapping_mul(37) % 101;
    let mut text = format!("#{index}: ");
    // A small LCG picks the words, seeded by the index, so every message differs.
    let mut state = (index as u64).wrapping_mul(6_364_136_223_846_793_005) ^ 0x9e37_79b9;
    while text.len() < target {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let word = WORDS
            .get((state >> 33) as usize % WORDS.len())
            .copied()
            .unwrap_or("ok");
        text.push_str(word);
        text.push(if state & 0xf == 0 { '.' } else { ' ' });
    }
    let mut bytes = text.into_bytes();
    bytes.truncate(target);
    bytes
}
