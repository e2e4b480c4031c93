//! Replays every kept fuzz input through the fuzz targets' own checks (`opsdeck::fuzzing`): the seeds under
//! `fuzz/seeds/<target>/` and every input the fuzzer ever found, kept under `fuzz/regressions/<target>/`.

use std::path::Path;

fn inputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

#[test]
fn every_kept_fuzz_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut replayed = 0;
    for (target, check) in opsdeck::fuzzing::TARGETS {
        let seeds = inputs(&root.join("seeds").join(target));
        assert!(!seeds.is_empty(), "fuzz/seeds/{target} has no seed inputs");
        for file in seeds.iter().chain(&inputs(&root.join("regressions").join(target))) {
            let data = std::fs::read(file).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                panic!("{target} fails on {}", file.display());
            }
            replayed += 1;
        }
    }
    assert!(replayed >= opsdeck::fuzzing::TARGETS.len());
}

#[test]
fn every_fuzz_target_has_a_binary() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml")).unwrap();
    for (target, _) in opsdeck::fuzzing::TARGETS {
        assert!(manifest.contains(&format!("name = \"{target}\"")), "fuzz/Cargo.toml lacks the {target} binary");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/fuzz_targets/{target}.rs"));
        let body = std::fs::read_to_string(&source).unwrap();
        assert!(
            body.contains(&format!("opsdeck::fuzzing::{target}(data)")),
            "{} calls another check",
            source.display()
        );
    }
}
