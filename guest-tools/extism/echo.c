/*
 * The benchmark's Extism peer: an Extism plugin whose `echo` export returns
 * its input unchanged. It is written against the Extism kernel ABI directly
 * (the `extism:host/env` imports), so no PDK is needed:
 *
 *   clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -o echo.wasm echo.c
 *
 * Built by scripts/build-guests.mjs into guest-tools/dist/extism-echo.wasm.
 */
#include <stdint.h>

#define ENV(name) __attribute__((import_module("extism:host/env"), import_name(name)))

ENV("input_length") extern uint64_t extism_input_length(void);
ENV("input_load_u8") extern uint32_t extism_input_load_u8(uint64_t offset);
ENV("input_load_u64") extern uint64_t extism_input_load_u64(uint64_t offset);
ENV("alloc") extern uint64_t extism_alloc(uint64_t length);
ENV("store_u8") extern void extism_store_u8(uint64_t offset, uint32_t value);
ENV("store_u64") extern void extism_store_u64(uint64_t offset, uint64_t value);
ENV("output_set") extern void extism_output_set(uint64_t offset, uint64_t length);

/* Copies the input to a new block of Extism memory, eight bytes at a time, and makes it the output. */
__attribute__((export_name("echo"))) int32_t echo(void) {
  uint64_t length = extism_input_length();
  uint64_t out = extism_alloc(length);
  uint64_t i = 0;
  for (; i + 8 <= length; i += 8) extism_store_u64(out + i, extism_input_load_u64(i));
  for (; i < length; i++) extism_store_u8(out + i, extism_input_load_u8(i));
  extism_output_set(out, length);
  return 0;
}
