// SPDX-License-Identifier: MIT
// loadee.go - test_loader.c's Go program (go build: statically linked):
// three goroutines blocked in read system calls (each holds a thread of
// its own), "ready pid=PID marker=ADDR", the end of standard input
// awaited, then "done ..." and exit status 7. Nothing else runs: the
// runtime starts no thread while the loader works, so the threads after
// an unload can be compared with those before.
package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

var marker uint64 = 0x5eed1234abcd

func main() {
	var fds [3][2]int
	done := make(chan error, 3)
	for i := range fds {
		if err := syscall.Pipe(fds[i][:]); err != nil {
			panic(err)
		}
		go func(fd int) {
			var b [1]byte
			n, err := syscall.Read(fd, b[:])
			if err == nil && n != 1 {
				err = fmt.Errorf("read %d bytes", n)
			}
			done <- err
		}(fds[i][0])
	}
	fmt.Printf("ready pid=%d marker=%p\n", os.Getpid(), &marker)
	io.Copy(io.Discard, os.Stdin)
	errors := 0
	for i := range fds {
		syscall.Write(fds[i][1], []byte{'x'})
	}
	for range fds {
		if err := <-done; err != nil {
			fmt.Println(err)
			errors++
		}
	}
	fmt.Printf("done mode=go errors=%d marker=%x\n", errors, marker)
	os.Exit(7)
}
