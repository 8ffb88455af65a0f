from services.chunker.main import main

main()
