# keying: what one key costs to encode, decode, hash and salt, beside a 31-byte memcpy.
hotrow_bench(key_codec_bench LIBS hotrow_keying hotrow_bench_support)
