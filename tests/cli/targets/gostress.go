// A Go program for ukprobe's go_opt case: jump-optimized entry probes in
// Go code under stress. 100 goroutines call work (a function with a
// frame: its entry probe past the stack check is a jump) and the leaves
// it calls (leafj's entry is a jump too: the leaf template) in a loop,
// recurse through grow deep enough to grow and copy their stacks again
// and again, and spin in loops without calls, which only an asynchronous
// preemption (SIGURG) interrupts, while a goroutine runs the collector
// over and over (stack scans and shrinks). The output is a checksum that
// depends on every call's result.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

//go:noinline
func leaf(x, y int) int { return x*31 + y }

// a leaf whose first instruction is one jump's room (imul $imm32)
//
//go:noinline
func leafj(x, y int) int { return x*1000003 + y }

//go:noinline
func work(x, y int) int { return (leaf(x, y) ^ leafj(y, x)) & 0xffffff }

//go:noinline
func grow(n int, pad [128]byte) int {
	if n == 0 {
		return int(pad[1])
	}
	return grow(n-1, pad) + 1
}

func main() {
	gs, iters, depth := 100, 20000, 500
	if len(os.Args) > 3 {
		gs, _ = strconv.Atoi(os.Args[1])
		iters, _ = strconv.Atoi(os.Args[2])
		depth, _ = strconv.Atoi(os.Args[3])
	}
	sums := make([]int, gs)
	stop := make(chan struct{})
	gcs := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				gcs <- n
				return
			default:
				runtime.GC()
				n++
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < gs; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := g
			for i := 0; i < iters; i++ {
				s = work(s, i)
				if i%5000 == 0 {
					var pad [128]byte
					pad[1] = byte(g)
					s += grow(depth, pad)
					// no call: only an asynchronous preemption stops it
					for j := 0; j < 2000000; j++ {
						s ^= j * (s | 1)
					}
					s &= 0xffffff
				}
			}
			sums[g] = s
		}(g)
	}
	wg.Wait()
	close(stop)
	if <-gcs == 0 {
		fmt.Println("no collection ran")
	}
	total := 0
	for _, v := range sums {
		total = (total*7 + v) & 0xffffffff
	}
	fmt.Println("total", total)
}
