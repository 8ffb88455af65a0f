from services.parser.main import main

main()
