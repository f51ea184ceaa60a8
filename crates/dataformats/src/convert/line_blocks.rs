//! A text file in blocks of whole lines, for parsing lines on several
//! threads with each line's number known (JSON lines → MLDF).

use std::io::{BufRead, Read};

/// Blocks are about this long (a line longer than that makes its block
/// longer).
pub(crate) const BLOCK: u64 = 1 << 20;

/// Whole lines of the input, with the 0-based number of the first.
pub(crate) struct LineBlock {
    pub(crate) first_line: usize,
    pub(crate) text: Vec<u8>,
}

impl LineBlock {
    /// The block's lines with their 0-based numbers, each without its `\n`
    /// and a `\r` before it (as `BufRead::lines` gives them).
    pub(crate) fn lines(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.text
            .split_inclusive(|&b| b == b'\n')
            .enumerate()
            .map(|(k, piece)| {
                let body = piece
                    .strip_suffix(b"\n")
                    .map_or(piece, |b| b.strip_suffix(b"\r").unwrap_or(b));
                (self.first_line + k, body)
            })
    }
}

/// Reads `reader` a block at a time.
pub(crate) struct LineBlocks<R> {
    reader: R,
    next_line: usize,
}

impl<R: BufRead> LineBlocks<R> {
    pub(crate) fn new(reader: R) -> Self {
        LineBlocks {
            reader,
            next_line: 0,
        }
    }

    /// The next block; `None` at the end.
    pub(crate) fn next_block(&mut self) -> std::io::Result<Option<LineBlock>> {
        let mut text = Vec::new();
        (&mut self.reader).take(BLOCK).read_to_end(&mut text)?;
        if text.len() as u64 == BLOCK && text.last() != Some(&b'\n') {
            self.reader.read_until(b'\n', &mut text)?;
        }
        if text.is_empty() {
            return Ok(None);
        }
        let first_line = self.next_line;
        self.next_line += text.iter().filter(|&&b| b == b'\n').count();
        Ok(Some(LineBlock { first_line, text }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks split only at line ends, number the lines as one pass
    /// would, and give each line as `BufRead::lines` does.
    #[test]
    fn blocks_give_the_lines_of_one_pass() {
        let mut text = Vec::new();
        for i in 0..300_000u32 {
            text.extend_from_slice(format!("line {i}").as_bytes());
            text.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
        }
        text.extend_from_slice(b"last\r");
        let want: Vec<(usize, Vec<u8>)> = std::io::Cursor::new(&text)
            .lines()
            .enumerate()
            .map(|(k, l)| (k, l.unwrap().into_bytes()))
            .collect();
        let mut blocks = LineBlocks::new(std::io::BufReader::new(std::io::Cursor::new(&text)));
        let mut got = Vec::new();
        let mut n = 0;
        while let Some(b) = blocks.next_block().unwrap() {
            assert!(b.text.ends_with(b"\n") || b.text.ends_with(b"last\r"));
            got.extend(b.lines().map(|(k, l)| (k, l.to_vec())));
            n += 1;
        }
        assert!(n > 2, "{n} blocks");
        assert_eq!(got, want);
    }
}
