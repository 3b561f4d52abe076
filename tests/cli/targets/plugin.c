/* SPDX-License-Identifier: MIT */
/* libukp_plugin.so: a library tgt_dlopen loads, unloads and loads again. */
int plugin_calls;

__attribute__((noinline)) int plugin_work(int i)
{
	plugin_calls++;
	return i * 10;
}

__attribute__((noinline)) int plugin_other(int i)
{
	return plugin_work(i) + 1;
}
