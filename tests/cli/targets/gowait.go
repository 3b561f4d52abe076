// A Go program to attach to (cases go_attach, go_nocgo): goroutines that
// call a recursive function and one that sleeps, until stdin ends.
package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func deep(n int) int {
	if n == 0 {
		return 0
	}
	return deep(n-1) + 1
}

//go:noinline
func sleeper(i int) int {
	time.Sleep(time.Millisecond * time.Duration(1+i%3))
	return i * 2
}

func main() {
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := 0; ; i++ {
				deep(100)
				sleeper(i + g)
			}
		}(g)
	}
	fmt.Println("waiting")
	os.Stdin.Read(make([]byte, 1))
	os.Exit(0)
}
