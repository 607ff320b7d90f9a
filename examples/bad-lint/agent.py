print("never run: lint rejects this pack")
