// A Go program for ukprobe's go case (tests/cli/clitest.py): recursion
// deep enough to grow its goroutine's stack many times, 100 goroutines
// that block (time.Sleep) and resume on other threads, a panic unwinding
// through probed frames and recovered, arguments in Go's registers, a
// method with a pointer receiver, and a raw exit_group (os.Exit).
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

//go:noinline
func deep(n int, pad [64]byte) int {
	if n == 0 {
		return int(pad[3])
	}
	return deep(n-1, pad) + 1
}

//go:noinline
func sleeper(i int) int {
	time.Sleep(time.Millisecond * time.Duration(1+i%3))
	return i * 2
}

//go:noinline
func thrower(n int) int {
	if n == 0 {
		panic("boom")
	}
	return thrower(n-1) + 1
}

//go:noinline
func catcher(n int) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return thrower(n)
}

//go:noinline
func add9(a, b, c, d, e, f, g, h, i int) int { return a + b + c + d + e + f + g + h + i }

type counter struct{ n int }

//go:noinline
func (c *counter) add(k int) int {
	c.n += k
	return c.n
}

func main() {
	depth := 10000
	if len(os.Args) > 1 {
		depth, _ = strconv.Atoi(os.Args[1])
	}
	var pad [64]byte
	pad[3] = 7
	fmt.Println("deep", deep(depth, pad))
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v := sleeper(i)
			mu.Lock()
			sum += v
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	fmt.Println("sum", sum)
	fmt.Println("catch", catcher(5))
	fmt.Println("add9", add9(1, 2, 3, 4, 5, 6, 7, 8, 9))
	c := &counter{}
	for k := 1; k <= 3; k++ {
		c.add(k)
	}
	fmt.Println("counter", c.n)
	os.Exit(3)
}
