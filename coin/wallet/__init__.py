"""The wallet: keys, HD derivation, encryption, and the records that hold them."""
