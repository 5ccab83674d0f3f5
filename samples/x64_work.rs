//! A Rust program with work to do: iterators and closures, a HashMap and a BTreeMap, string
//! formatting, threads joined over channels, a panic caught with `catch_unwind` (unwinding
//! through frames that run from copies) and one that ends the program (exit status 101).
use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;
use std::thread;

fn words(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("w{}", (k * 7919) % 1009)).collect()
}

fn depth(n: u32) -> u32 {
    if n == 0 { panic!("deep panic at the bottom") }
    1 + depth(n - 1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20000);
    let mut counts: HashMap<String, usize> = HashMap::new();
    for w in words(n) {
        *counts.entry(w).or_default() += 1;
    }
    let sorted: BTreeMap<_, _> = counts.iter().map(|(k, v)| ((v, k), k.len())).collect();
    let top: Vec<_> = sorted.iter().rev().take(3).collect();
    println!("distinct {} top {:?}", counts.len(), top);
    let (tx, rx) = mpsc::channel();
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                let s: u64 = (0..200_000u64).filter(|x| x % (t + 2) == 0).map(|x| x * x % 1_000_003).sum();
                tx.send((t, s)).unwrap();
            })
        })
        .collect();
    drop(tx);
    for h in handles {
        h.join().unwrap();
    }
    let mut sums: Vec<_> = rx.iter().collect();
    sums.sort();
    println!("threads {:?}", sums);
    std::panic::set_hook(Box::new(|info| eprintln!("hook: {}", info.payload().downcast_ref::<&str>().unwrap_or(&"?"))));
    let caught = std::panic::catch_unwind(|| depth(50));
    println!("caught {}", caught.is_err());
    if args.iter().any(|a| a == "die") {
        let v: Vec<u32> = Vec::new();
        println!("{}", v[args.len()]);
    }
}
