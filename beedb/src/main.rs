//! `beedb [FILE]`: the BeeDB shell.

fn main() {
    eprintln!("the shell is being built");
    std::process::exit(2);
}
