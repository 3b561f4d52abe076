// SPDX-License-Identifier: MIT
//
// go_hit [split] N: the Go rows of the tool benchmark's per-hit measure
// (bench_tool.py, bench_go): calls main.target, a leaf of Go's register
// ABI (x + 1 + y), or with "split" main.split (which calls it: a
// function with a frame, so with Go's stack check, past which an entry
// probe is jump-optimized), N times on a goroutine locked to its thread, and
// prints the thread's CPU time per call around the loop only, as
// bench_tool_hit does for C: "ns_per_call X wall_ns_per_call Y hits N".
// Built twice: with -linkmode=external (a dynamic executable, the
// preloaded agent) and as Go's default static one (the freestanding
// agent).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

//go:noinline
func target(x, y int) int {
	return x + 1 + y
}

//go:noinline
func split(x, y int) int {
	return target(x, y)
}

// CLOCK_THREAD_CPUTIME_ID: the thread's CPU time, which counts the
// probe's signal handler (it runs on this thread) and not other
// processes' turns on a shared machine.
func threadNs() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec)*1e9 + float64(ts.Nsec)
}

func main() {
	n := 1000000
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[len(os.Args)-1])
	}
	f := target
	if len(os.Args) > 2 && os.Args[1] == "split" {
		f = split
	}
	runtime.LockOSThread()
	sink := 0
	w0 := time.Now()
	t0 := threadNs()
	for i := 0; i < n; i++ {
		sink = f(sink, i)
	}
	t1 := threadNs()
	w1 := time.Since(w0)
	if sink == 42 {
		fmt.Fprintln(os.Stderr, "unlikely")
	}
	fmt.Printf("ns_per_call %.3f wall_ns_per_call %.3f hits %d\n", (t1-t0)/float64(n),
		float64(w1.Nanoseconds())/float64(n), n)
}
