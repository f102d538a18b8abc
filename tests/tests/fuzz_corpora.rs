//! Every committed fuzz corpus is replayed as an ordinary test: each input through its target.
#![allow(clippy::unwrap_used, clippy::panic)]

use proteus_tests::fuzzing::TARGETS;

#[test]
fn every_corpus_input_passes_its_target() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut inputs = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            target(&std::fs::read(&path).unwrap());
            inputs += 1;
        }
        assert!(inputs > 0, "the corpus of {name} is empty");
        println!("{name}: {inputs} inputs");
    }
}
