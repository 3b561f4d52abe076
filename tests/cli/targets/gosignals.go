// A Go program for ukprobe's go_static case: Go's own use of signals
// while its functions are probed. A nil pointer dereference recovered
// (SIGSEGV, one of the library's signals: Go's handler, recorded and
// chained, makes it a panic), os/signal.Notify of SIGUSR1 and of
// SIGTRAP (the library's: a trap that is no probe's goes to Go's
// handler) with the signals sent to itself, SIGUSR2 ignored, and a
// probed function called throughout.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type box struct{ x int }

//go:noinline
func poke(b *box) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return b.x
}

//go:noinline
func work(i int) int { return i*3 + 1 }

func expect(c chan os.Signal, what string) {
	select {
	case s := <-c:
		fmt.Println("got", s)
	case <-time.After(20 * time.Second):
		fmt.Println("no", what)
		os.Exit(1)
	}
}

func main() {
	n := 0
	for i := 0; i < 1000; i++ {
		n += work(i)
	}
	fmt.Println("work", n)
	fmt.Println("poke", poke(nil), poke(&box{5}))
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	expect(c, "SIGUSR1")
	signal.Ignore(syscall.SIGUSR2)
	syscall.Kill(os.Getpid(), syscall.SIGUSR2)
	time.Sleep(10 * time.Millisecond)
	fmt.Println("SIGUSR2 ignored")
	signal.Notify(c, syscall.SIGTRAP)
	syscall.Kill(os.Getpid(), syscall.SIGTRAP)
	expect(c, "SIGTRAP")
	for i := 0; i < 1000; i++ {
		n += work(i)
	}
	fmt.Println("work", n)
}
