from services.retriever.main import main

main()
