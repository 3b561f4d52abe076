// A Rust program for ukprobe's rust case (tests/cli/clitest.py): panics
// that unwind through return-probed frames and are caught (their
// backtraces printed on request), a method of an
// inherent impl, and a generic function; built with legacy and v0 symbol
// mangling.
use std::panic;

pub mod shapes {
    pub struct Circle {
        pub r: u64,
    }
    impl Circle {
        #[inline(never)]
        pub fn area(&self) -> u64 {
            3 * self.r * self.r
        }
    }
}

#[inline(never)]
fn depth(n: u32) -> u32 {
    if n == 0 {
        panic!("bottom reached");
    }
    depth(n - 1) + 1
}

#[inline(never)]
fn guarded(n: u32) -> i64 {
    match panic::catch_unwind(|| depth(n)) {
        Ok(v) => v as i64,
        Err(_) => -1,
    }
}

fn main() {
    // PANICS_BACKTRACE set: the default hook prints every panic with its
    // backtrace (case rust_backtrace: the same frames under probes)
    if std::env::var_os("PANICS_BACKTRACE").is_none() {
        panic::set_hook(Box::new(|_| {}));
    }
    let mut caught = 0;
    for i in 0..10 {
        if guarded(i % 4) < 0 {
            caught += 1;
        }
    }
    let c = shapes::Circle { r: std::env::args().count() as u64 + 1 };
    println!("caught {} area {}", caught, c.area());
    std::process::exit(4);
}
