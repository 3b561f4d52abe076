/* SPDX-License-Identifier: MIT */
/*
 * ukprobe-host: the program "ukprobe probes OBJ" runs with the agent
 * preloaded when OBJ is a shared library. The agent dlopen()s OBJ, shows
 * its functions and ends the process from its constructor: main() is
 * never reached (and would do nothing).
 */
int main(void)
{
	return 0;
}
